// bench/predict/sweep_main.cpp — `predict_sweep`: time every candidate of several kernel families on the GPU and
// write the predictor's dataset (predict/dataset.hpp). Usage:
//   predict_sweep --out h200.json [--family gemm --family rowwise --family matmul_v1 --family attention] [--quick]
// Then, on any machine: `tilejit predict eval h200.json`, `tilejit predict train h200.json -o model.json`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "bench/predict/sweep.hpp"

namespace sweep {

tj::TuneOptions Context::options(pr::Recorder& rec, const std::string& family) const {
  tj::TuneOptions o;
  o.device = dev;
  o.cache_dir = std::filesystem::path{};  // no stored winners: every key is raced
  o.rank = rec.rank_function(family);     // records each candidate's summary; times all of them
  o.log = [](const std::string&) {};      // skipped configs are in the reports
  return o;
}

void Context::add(pr::Recorder& rec, const std::string& family, const tj::TuneReport& r) {
  auto s = rec.samples(family, r);
  std::size_t failed = 0;
  for (const auto& x : r.candidates) failed += x.status != tj::CandidateReport::Status::timed;
  say(fmt::format("{:<28} {:<52} {:>2} timed, {} not ({:.0f} ms)", family, r.key, s.size(), failed, r.total_ms));
  for (auto& x : s) data.samples.push_back(std::move(x));
}

}  // namespace sweep

int main(int argc, char** argv) {
  CLI::App app{"time every candidate config of several kernel families: the predictor's training data"};
  std::string out;
  std::vector<std::string> families{"gemm", "rowwise", "matmul_v1", "attention"};
  bool quick = false;
  app.add_option("--out", out, "dataset file to write (JSON)")->required();
  app.add_option("--family", families, "families to run: gemm, rowwise, matmul_v1, attention (default: all)")
      ->check(CLI::IsMember({"gemm", "rowwise", "matmul_v1", "attention"}));
  app.add_flag("--quick", quick, "a few keys per family");
  CLI11_PARSE(app, argc, argv);
  try {
    sweep::Context c{tilejit::Device::best(), quick, {}, [](const std::string& s) { std::printf("%s\n", s.c_str()), std::fflush(stdout); }};
    if (c.dev.backend() == tilejit::Backend::interpreter) {
      std::fprintf(stderr, "predict_sweep: no GPU (%s): the dataset times GPU kernels\n", tilejit::Device::cuda_unavailable_reason().c_str());
      return 1;
    }
    c.data.device = tilejit::predict::device_spec(c.dev);
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& f : families) {
      if (f == "gemm") sweep::gemm(c);
      if (f == "rowwise") sweep::rowwise(c);
      if (f == "matmul_v1") sweep::matmul_v1(c);
      if (f == "attention") sweep::attention(c);
      tilejit::predict::save_dataset(c.data, out);  // after each family: a later failure keeps what was measured
    }
    std::printf("%zu samples in %zu groups on %s, %.1f s -> %s\n", c.data.samples.size(), c.data.groups().size(),
                c.data.device.name.c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predict_sweep: %s\n", e.what());
    return 1;
  }
}
