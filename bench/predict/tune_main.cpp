// bench/predict/tune_main.cpp — `predict_tune`: the library GEMM's autotuning on shapes, with the race as it ships
// (every candidate), ranked by the learned model or by the roofline estimate with only the top k compiled and timed.
// One mode per process, so each starts with the kernel cache it is given (TILEJIT_CACHE_DIR): a cold cache measures
// what tuning a new shape costs. Usage:
//   predict_tune --mode full|model|roofline [--model m.json] [--top-k 3] --out r.json [--shape MxNxK ...]
// Prints one line per shape and writes every candidate's status and median to --out (JSON).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <tuple>

#include "examples/gemm/gemm.hpp"
#include "tilejit/predict/ranker.hpp"

namespace tj = tilejit;
namespace pr = tilejit::predict;

int main(int argc, char** argv) {
  CLI::App app{"the library GEMM's tuning: full race, or ranked with only the top k timed"};
  std::string mode = "full", model_file, out;
  int top_k = 3;
  std::vector<std::string> shapes{"2048x4096x4096",  "12288x4096x4096", "4096x11008x4096", "4096x4096x11008",
                                  "8192x2560x8192",  "6144x384x6144",   "2048x14336x4096", "16384x1024x4096",
                                  "4096x5120x5120",  "10240x8192x1024"};
  app.add_option("--mode", mode, "full, model or roofline")->check(CLI::IsMember({"full", "model", "roofline"}));
  app.add_option("--model", model_file, "the ranking model (tilejit predict train)");
  app.add_option("--top-k", top_k, "configs compiled and timed when ranked")->check(CLI::Range(1, 64));
  app.add_option("--shape", shapes, "MxNxK, repeatable");
  app.add_option("--out", out, "results (JSON)")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    tj::Device dev = tj::Device::best();
    if (dev.backend() == tj::Backend::interpreter) {
      std::fprintf(stderr, "predict_tune: no GPU\n");
      return 1;
    }
    tj::TuneOptions o;
    o.cache_dir = std::filesystem::path{};  // no stored winners
    o.log = [](const std::string&) {};
    if (mode == "model") {
      if (model_file.empty()) throw tj::InvalidArgument("--mode model needs --model FILE");
      o.rank = pr::ranker(std::make_shared<const pr::RankModel>(pr::RankModel::load(model_file)));
      o.top_k = top_k;
    } else if (mode == "roofline") {
      o.rank = pr::roofline_ranker();
      o.top_k = top_k;
    }
    std::vector<std::tuple<long long, long long, long long>> list;
    long long ma = 0, mb = 0, mc = 0;
    for (const auto& s : shapes) {
      long long M = 0, N = 0, K = 0;
      if (std::sscanf(s.c_str(), "%lldx%lldx%lld", &M, &N, &K) != 3) throw tj::InvalidArgument("--shape " + s + ": expected MxNxK");
      list.emplace_back(M, N, K);
      ma = std::max(ma, M * K), mb = std::max(mb, N * K), mc = std::max(mc, M * N);
    }
    auto fill = [&](std::size_t n) {
      std::vector<tj::bf16> h(n);
      std::mt19937 g(static_cast<unsigned>(n));
      std::uniform_real_distribution<float> u(-1, 1);
      for (auto& x : h) x = tj::bf16(u(g));
      auto* p = static_cast<tj::bf16*>(dev.alloc(n * sizeof(tj::bf16)));
      dev.copy_to_device(p, h.data(), n * sizeof(tj::bf16));
      return p;
    };
    auto* a = fill(static_cast<std::size_t>(ma));
    auto* b = fill(static_cast<std::size_t>(mb));
    auto* c = static_cast<float*>(dev.alloc(static_cast<std::size_t>(mc) * sizeof(float)));
    nlohmann::json res = nlohmann::json::array();
    examples::Gemm<tj::bf16> gemm(dev, o);
    for (auto [M, N, K] : list) {
      const auto t0 = std::chrono::steady_clock::now();
      gemm(a, b, c, M, N, K);
      dev.synchronize();
      const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const tj::TuneReport& r = gemm.report(M, N, K);
      const auto& best = r.candidates[r.best];
      std::size_t timed = 0;
      nlohmann::json cands = nlohmann::json::array();
      for (const auto& x : r.candidates) {
        timed += x.status == tj::CandidateReport::Status::timed;
        cands.push_back({{"config", x.config.str()}, {"status", tj::to_string(x.status)}, {"median_ms", x.median_ms},
                         {"score", std::isnan(x.score) ? nlohmann::json(nullptr) : nlohmann::json(x.score)}, {"rank", x.rank}});
      }
      std::printf("%-8s %6lldx%-6lldx%-6lld tune %8.1f ms (rank %6.1f, compile %8.1f, bench %7.1f) timed %2zu  best %-44s %.4f ms %.0f TFLOP/s\n",
                  mode.c_str(), M, N, K, wall, r.rank_ms, r.compile_ms, r.bench_ms, timed, best.config.str().c_str(), best.median_ms,
                  2.0 * M * N * K / best.median_ms / 1e9);
      std::fflush(stdout);
      res.push_back({{"M", M}, {"N", N}, {"K", K}, {"mode", mode}, {"tune_ms", wall}, {"rank_ms", r.rank_ms}, {"compile_ms", r.compile_ms},
                     {"bench_ms", r.bench_ms}, {"best", best.config.str()}, {"best_ms", best.median_ms}, {"candidates", cands}});
    }
    std::ofstream(out) << res.dump(1) << "\n";
    dev.free(a), dev.free(b), dev.free(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predict_tune: %s\n", e.what());
    return 1;
  }
}
