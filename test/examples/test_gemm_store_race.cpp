// The library GEMM with a bf16 C (examples::Gemm<bf16, bf16>): the store race (rung 6 and rung 7 persistent storing
// C through a descriptor, by TMA on sm_90a) — its list and keys, every candidate's sm_90a text (TMA store or, for
// blocks TMA cannot store, the masked store with a diagnostic) compiled by NVRTC without spills, the rule that picks
// it (C 16-byte aligned, rows whole 16-byte chunks), and the three ways C is written (store race; f32 race + rounding
// pass; small-M + rounding pass) against f64 with C poisoned, on the interpreter and on a Hopper GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "examples/gemm/gemm.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"

namespace tj = tilejit;
using bf = tj::bf16;
using G = examples::Gemm<bf, bf>;

namespace {

using testing::keeping;

/// The library call with C poisoned, checked against f64 with one rounding to bf16 (testing::run_rounded).
void run(const tj::Device& dev, G& gemm, const testing::GemmTN<bf>& p, int offset = 0) { testing::run_rounded(dev, gemm, p, offset); }

}  // namespace

TEST_CASE("gemm_store_race_candidates_and_keys") {
  std::vector<std::string> names;
  for (const auto& c : G::store_candidates()) names.push_back(c.config.str());
  const std::vector<std::string> expected = {
      "BM=128 BN=256 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4",
      "BM=128 BN=256 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=3",
      "BM=256 BN=128 PERSISTENT=1 STORE=1 WS=1 num_warps=16 num_stages=3",
      "BM=128 BN=192 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4",
      "BM=128 BN=128 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4",
      "BM=64 BN=256 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=4",
      "BM=64 BN=192 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=6",
      "BM=64 BN=128 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=6",
      "BM=64 BN=96 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=8",
      "BM=64 BN=64 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=8",
      "BM=128 BN=256 CLUSTER=2 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4",
      "BM=256 BN=128 CLUSTER=2 PERSISTENT=1 STORE=1 WS=1 num_warps=16 num_stages=3",
  };
  CHECK(names == expected);
  CHECK(names.size() <= 16);
  for (const auto& c : G::store_candidates()) {
    CAPTURE(c.config.str());
    CHECK(G::persistent(c.config));
    CHECK(c.config.num_warps == c.config.param("BM") / 16);
    // Whole clusters for rung 7, min(tiles, SMs) programs for rung 6.
    const tj::Grid g = G::grid(8192, 3000, 132)(c.config);
    CHECK(g.x == (c.config.params.contains("CLUSTER") ? 132 : std::min(132LL, tj::cdiv(8192, c.config.param("BM")) * tj::cdiv(3000, c.config.param("BN")))));
  }
  // The store race's key names C's type and its own list's version; the f32 race's key is unchanged.
  const std::string k = G::store_key(4096, 4096, 4096).str();
  CHECK(k.find("out=\"bf16\"") != std::string::npos);
  CHECK(k.find("cands=" + std::to_string(G::STORE_CANDIDATES_VERSION)) != std::string::npos);
  CHECK(G::key(4096, 4096, 4096).str() == examples::Gemm<bf>::key(4096, 4096, 4096).str());
}

TEST_CASE("gemm_store_race_is_taken_for_aligned_c_with_whole_16_byte_rows") {
  alignas(16) static bf buf[16];
  CHECK(G::stores_by_descriptor(buf, 4096));
  CHECK(G::stores_by_descriptor(buf, 8));
  CHECK_FALSE(G::stores_by_descriptor(buf, 4100));   // 8200-byte rows: a TMA store would write past column N - 1
  CHECK_FALSE(G::stores_by_descriptor(buf + 1, 4096));  // C 2-byte aligned: no descriptor base
  alignas(16) static float f32[4];
  CHECK_FALSE(examples::Gemm<bf>::stores_by_descriptor(f32, 4096));  // an f32 C never takes it
  // Bad input still names the rule: C aligned to its element size.
  const auto dev = tj::Device::interpreter();
  G gemm(dev, keeping({}));
  std::vector<bf> a(64 * 64, bf(1.0f)), b(64 * 64, bf(1.0f));
  CHECK_THROWS_WITH_AS(gemm(a.data(), b.data(), reinterpret_cast<bf*>(reinterpret_cast<char*>(buf) + 1), 64, 64, 64),
                       doctest::Contains("aligned to its element size (2 bytes)"), tj::InvalidArgument);
}

TEST_CASE("gemm_store_race_candidates_compile_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  const auto dev = tj::Device::interpreter();
  for (const auto& c : G::store_candidates()) {
    const std::string what = c.config.str();
    CAPTURE(what);
    const auto core = c.make(dev, c.config);
    // The specialisation of an aligned launch (C's rows whole 16-byte chunks).
    const auto g = core->source(testing::all_div16(core->ir()));
    CHECK(testing::has_diagnostic(g, "warp specialised: " + std::to_string(c.config.num_warps) + " consumer warp(s)"));
    if (c.config.param("BN") == 96) {  // 192-byte rows: not whole 128-byte slabs
      CHECK(testing::has_diagnostic(g, "tma_store not applied"));
      CHECK(g.source.find("tj_tma_store_2d(") == std::string::npos);
    } else {
      CHECK(testing::has_diagnostic(g, "stored by TMA"));
      // C's box is the program's whole block of rows by one 128-byte slab — in clusters too, where B's multicast
      // box is a slice (a sliced C box left half of every tile unwritten on the H200).
      REQUIRE(g.tma_params.size() == 3);
      CHECK(g.tma_params[2] == 2);
      CHECK(g.tma_boxes[2] == std::array<int, 2>{static_cast<int>(c.config.param("BM")), 64});
    }
    CHECK(g.dynamic_shared_bytes <= 227 * 1024);
    testing::compiles_for_sm90a_without_spills(g.source, "store_" + what + ".cu");
  }
}

TEST_CASE("gemm_small_m_kernels_writing_bf16_compile_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  const auto target = tj::codegen::target_for("sm_90a");
  for (const auto& k : G::SMALL_M_KERNELS) {
    CAPTURE(k.block_m);
    auto gen = [&](auto kernel) {
      const tj::ir::Kernel ir = tj::trace(kernel);
      return tj::codegen::generate(ir, testing::all_div16(ir), target, {.num_warps = G::SMALL_M_BLOCK_N / 16, .num_stages = k.stages});
    };
    tj::codegen::Generated g;
    switch (k.block_m) {
      case 8: g = gen(examples::MatmulSmallM<64, 8, bf, bf>{}); break;
      case 16: g = gen(examples::MatmulSmallM<64, 16, bf, bf>{}); break;
      case 32: g = gen(examples::MatmulSmallM<64, 32, bf, bf>{}); break;
      case 64: g = gen(examples::MatmulSmallM<64, 64, bf, bf>{}); break;
      default: g = gen(examples::MatmulSmallM<64, 128, bf, bf>{}); break;
    }
    CHECK(g.tma_params == std::vector<int>{0, 1});
    testing::compiles_for_sm90a_without_spills(g.source, "small_m_bf16_out_" + std::to_string(k.block_m) + ".cu");
  }
}

TEST_CASE("gemm_store_race_interpreter_matches_f64_on_every_path") {
  const auto dev = tj::Device::interpreter();
  // Ragged M, N, K against every tile; N = 304: 608-byte rows (the store race), N = 300: 600-byte rows (the f32
  // race into a workspace, then the rounding pass), M = 8: the small-M kernel and the rounding pass.
  const testing::GemmTN<bf> aligned(270, 304, 136, 51), ragged(270, 300, 136, 53), small(8, 200, 256, 55);
  for (const char* keep : {"BM=128 BN=192 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4",
                           "BM=64 BN=96 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=8",
                           "BM=256 BN=128 CLUSTER=2 PERSISTENT=1 STORE=1 WS=1 num_warps=16 num_stages=3"}) {
    CAPTURE(keep);
    G gemm(dev, keeping({keep}));
    run(dev, gemm, aligned);
    CHECK(gemm.report(aligned.M, aligned.N, aligned.K).best_config().str() == keep);
  }
  const std::string f32 = "BM=128 BN=256 PERSISTENT=1 WS=1 num_warps=8 num_stages=4";
  G gemm(dev, keeping({f32}));
  run(dev, gemm, ragged);
  CHECK(gemm.report(ragged.M, ragged.N, ragged.K).best_config().str() == f32);  // the f32 race's report
  run(dev, gemm, aligned, 1);  // C 2-byte aligned: the f32 race too
  run(dev, gemm, small);  // one split: the small-M kernel rounds into C itself
  CHECK(G::path_for(small.M, small.N, small.K, dev.num_sms()) == G::Path::small_m);
  CHECK(G::small_m_for(small.M, small.N, small.K, dev.num_sms()).splits == 1);
  const testing::GemmTN<bf> split(8, 64, 2048, 57);  // K split: f32 partial sums, rounded by SplitKReduce
  CHECK(G::small_m_for(split.M, split.N, split.K, dev.num_sms()).splits > 1);
  run(dev, gemm, split);
}

TEST_CASE("gemm_store_race_gpu_every_candidate_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  // 2000 % 128 = 80, 3008 % 256 = 192, 144 % 64 = 16: every tile ragged; more tiles than SMs for most configs.
  const testing::GemmTN<bf> p(2000, 3008, 144, 61);
  for (const auto& c : G::store_candidates()) {
    CAPTURE(c.config.str());
    G gemm(dev, keeping({c.config.str()}));
    run(dev, gemm, p);
    CHECK(gemm.report(p.M, p.N, p.K).best_config() == c.config);
  }
  // The other two ways: rows ending mid 16-byte chunk (N = 3004), C 2-byte aligned, and small M.
  G gemm(dev, keeping({"BM=128 BN=256 PERSISTENT=1 WS=1 num_warps=8 num_stages=4"}));
  run(dev, gemm, testing::GemmTN<bf>(2000, 3004, 144, 63));
  run(dev, gemm, p, 1);
  run(dev, gemm, testing::GemmTN<bf>(16, 4096, 4096, 65));   // small M, K split 5 ways: SplitKReduce rounds
  run(dev, gemm, testing::GemmTN<bf>(16, 28672, 512, 67));   // small M, one split: the kernel rounds into C
}

TEST_CASE("gemm_reuses_the_last_calls_descriptors_only_for_the_same_operands") {
  // The library keeps the last tuned-path call's descriptors and key; a call with other operands (same shape) or
  // another C must not run on the old ones.
  const auto dev = tj::Device::interpreter();
  G gemm(dev, keeping({"BM=64 BN=64 PERSISTENT=1 STORE=1 WS=1 num_warps=4 num_stages=8"}));
  const testing::GemmTN<bf> p(130, 136, 64, 71), q(130, 136, 64, 73);
  const std::size_t n = static_cast<std::size_t>(p.M) * p.N;
  auto a = p.a, b = p.b, a2 = q.a, b2 = q.b;
  std::vector<bf> c1(n, bf(std::nanf(""))), c2(n, bf(std::nanf("")));
  gemm(a.data(), b.data(), c1.data(), p.M, p.N, p.K);
  p.check_rounded(c1);
  gemm(a.data(), b.data(), c1.data(), p.M, p.N, p.K);  // the same call again: reused
  p.check_rounded(c1);
  gemm(a2.data(), b2.data(), c1.data(), q.M, q.N, q.K);  // other inputs into the same C
  q.check_rounded(c1);
  gemm(a.data(), b.data(), c2.data(), p.M, p.N, p.K);  // another C
  p.check_rounded(c2);
  q.check_rounded(c1);  // untouched by the last call
}
