// The library GEMM's race (examples/gemm/gemm.hpp): rung-5 configs (power-of-two and NPOT BLOCK_N) beside rung-6
// persistent warp-specialised ones, at most 16; every candidate compiled for sm_90a by NVRTC with no spills; the
// library call with one candidate forced (the others pruned) against f64 — rung 6 on the interpreter, every
// candidate on a Hopper GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "examples/gemm/gemm.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;
using G = examples::Gemm<tj::bf16>;

namespace {

/// bf16 A·Bᵀ with its f64 reference; check(c): every element written, within f32 accumulation error of f64 (the
/// split partial sums are f32 sums too).
using Problem = testing::GemmTN<tj::bf16>;

/// Runs the library call with only `config` in the race and checks the report says so.
void forced_call(const tj::Device& dev, const tj::Config& config, const Problem& p, const tj::bf16* a, const tj::bf16* b, float* c) {
  G gemm(dev, testing::keeping({config.str()}));
  gemm(a, b, c, p.M, p.N, p.K);
  const auto& r = gemm.report(p.M, p.N, p.K);
  CHECK(r.best_config() == config);
  CHECK(r.candidates[r.best].status == tj::CandidateReport::Status::timed);
  int pruned = 0;
  for (const auto& cr : r.candidates) pruned += cr.status == tj::CandidateReport::Status::pruned;
  CHECK(pruned == static_cast<int>(r.candidates.size()) - 1);
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& c : G::candidates()) out.push_back(c.config.str());
  return out;
}

}  // namespace

TEST_CASE("gemm_tuned_candidates_race_rung5_pow2_and_npot_beside_rung6_persistent_ws") {
  const auto cands = G::candidates();
  const std::vector<std::string> expected = {
      "BM=128 BN=256 num_warps=8 num_stages=3",
      "BM=128 BN=256 num_warps=8 num_stages=4",
      "BM=128 BN=192 num_warps=8 num_stages=4",
      "BM=128 BN=128 num_warps=8 num_stages=4",
      "BM=128 BN=96 num_warps=8 num_stages=5",
      "BM=128 BN=64 num_warps=8 num_stages=6",
      "BM=64 BN=256 num_warps=4 num_stages=4",
      "BM=64 BN=192 num_warps=4 num_stages=6",
      "BM=64 BN=128 num_warps=4 num_stages=6",
      "BM=64 BN=96 num_warps=4 num_stages=6",
      "BM=64 BN=64 num_warps=4 num_stages=8",
      "BM=128 BN=256 PERSISTENT=1 WS=1 num_warps=8 num_stages=4",
      "BM=256 BN=128 PERSISTENT=1 WS=1 num_warps=16 num_stages=4",
      "BM=128 BN=192 PERSISTENT=1 WS=1 num_warps=8 num_stages=4",
      "BM=128 BN=256 CLUSTER=2 PERSISTENT=1 WS=1 num_warps=8 num_stages=4",
      "BM=256 BN=128 CLUSTER=2 PERSISTENT=1 WS=1 num_warps=16 num_stages=4",
  };
  CHECK(names() == expected);
  CHECK(cands.size() <= 16);  // "16 configs tuned in < 3 s"
  CHECK(std::set<std::string>(expected.begin(), expected.end()).size() == expected.size());
  // Both kinds of tile width in each rung (the rule: power-of-two variants stay beside NPOT ones).
  auto pow2 = [](long long x) { return (x & (x - 1)) == 0; };
  int r5_pow2 = 0, r5_npot = 0, r6_pow2 = 0, r6_npot = 0;
  for (const auto& c : cands) {
    CAPTURE(c.config.str());
    const long long bm = c.config.param("BM"), bn = c.config.param("BN");
    CHECK(c.config.num_warps == bm / 16);  // one warp per 16 rows: a consumer warp group per 64
    if (G::persistent(c.config)) {
      CHECK(c.config.param("WS") == 1);
      (pow2(bn) ? r6_pow2 : r6_npot) += 1;
    } else {
      CHECK_FALSE(c.config.params.contains("WS"));
      (pow2(bn) ? r5_pow2 : r5_npot) += 1;
    }
  }
  CHECK(r5_pow2 >= 1);
  CHECK(r5_npot >= 1);
  CHECK(r6_pow2 >= 1);
  CHECK(r6_npot >= 1);
  // The grid of each kind: one program per tile; min(tiles, SMs) programs.
  for (const auto& c : cands) {
    CAPTURE(c.config.str());
    const long long bm = c.config.param("BM"), bn = c.config.param("BN");
    const long long tiles = tj::cdiv(8192, bm) * tj::cdiv(3000, bn);
    const tj::Grid g = G::grid(8192, 3000, 132)(c.config);
    if (c.config.params.contains("CLUSTER")) {  // whole clusters of 2, one program per SM: 66 clusters
      CHECK(c.config.param("CLUSTER") == 2);
      CHECK(g.x == 132);
      CHECK(G::grid(100, 100, 132)(c.config).x == 2);  // one cluster tile: one cluster
      continue;
    }
    CHECK(g.x == (G::persistent(c.config) ? std::min(tiles, 132LL) : tiles));
    CHECK(G::grid(100, 100, 132)(c.config).x == tj::cdiv(100, bm) * tj::cdiv(100, bn));  // fewer tiles than SMs
  }
  // The key names the candidate list's version: winners stored from another race are not reused.
  CHECK(G::key(4096, 4096, 4096).str().find("cands=" + std::to_string(G::CANDIDATES_VERSION)) != std::string::npos);
  CHECK(G::CANDIDATES_VERSION >= 3);
}

TEST_CASE("gemm_tuned_candidates_compile_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  // A candidate built for the interpreter generates sm_90a text (KernelCore::source), with the candidate's options.
  const auto dev = tj::Device::interpreter();
  for (const auto& c : G::candidates()) {
    const std::string what = c.config.str();
    CAPTURE(what);
    const auto core = c.make(dev, c.config);
    const auto g = core->source();
    if (G::persistent(c.config))
      CHECK(testing::has_diagnostic(g, "warp specialised: " + std::to_string(c.config.num_warps) + " consumer warp(s)"));
    else
      CHECK(g.source.find("setmaxnreg") == std::string::npos);
    testing::compiles_for_sm90a_without_spills(g.source, what + ".cu");
  }
}

TEST_CASE("gemm_tuned_interpreter_forced_rung6_configs_match_f64") {
  const auto dev = tj::Device::interpreter();
  // Ragged M, N, K; with the interpreter's "SM" count (its threads) the programs walk several tiles when it is
  // below the tile count (the grid: min(tiles, SMs)).
  const Problem shapes[] = {Problem(270, 300, 136, 31), Problem(70, 200, 72, 37)};
  int forced = 0;
  for (const auto& cand : G::candidates()) {
    if (!G::persistent(cand.config)) continue;
    ++forced;
    for (const Problem& p : shapes) {
      CAPTURE(cand.config.str());
      CAPTURE(p.M);
      CAPTURE(p.N);
      CAPTURE(p.K);
      std::vector<float> c(static_cast<std::size_t>(p.M) * p.N, std::nanf(""));
      forced_call(dev, cand.config, p, p.a.data(), p.b.data(), c.data());
      p.check(c);
    }
  }
  CHECK(forced == 5);
}

TEST_CASE("gemm_tuned_gpu_every_candidate_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  // M, N, K ragged against every tile (2000 % 128 = 80, 3008 % 256 = 192, 144 % 64 = 16) but multiples of 16, so the
  // kernels are the specialisation the 4096^3 race compiles (kernel cache hits when it ran first); 192-384 tiles
  // for the rung-6 configs, more than the H200's 132 programs. Ragged extents off the multiples of 16: the
  // interpreter test above.
  const Problem p(2000, 3008, 144, 41);
  auto* da = static_cast<tj::bf16*>(dev.alloc(p.a.size() * 2));
  auto* db = static_cast<tj::bf16*>(dev.alloc(p.b.size() * 2));
  const std::size_t cbytes = static_cast<std::size_t>(p.M) * p.N * 4;
  auto* dc = static_cast<float*>(dev.alloc(cbytes));
  dev.copy_to_device(da, p.a.data(), p.a.size() * 2);
  dev.copy_to_device(db, p.b.data(), p.b.size() * 2);
  for (const auto& cand : G::candidates()) {
    CAPTURE(cand.config.str());
    CAPTURE(testing::fresh_seed());
    dev.memset(dc, 0xff, cbytes);  // NaN: every element must be written
    forced_call(dev, cand.config, p, da, db, dc);
    std::vector<float> c(static_cast<std::size_t>(p.M) * p.N);
    dev.copy_to_host(c.data(), dc, cbytes);
    p.check(c);
  }
  dev.free(da), dev.free(db), dev.free(dc);
}
