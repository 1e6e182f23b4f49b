// examples::Gemm<T, Out> with a 16-bit C beyond bf16: the f16 instantiation Gemm<f16, f16> (its store race's kernels
// compiled for sm_90a, every way of writing C on the interpreter against f64 with one rounding to f16), and the
// extents whose products overflow 64-bit arithmetic rejected by name rather than wrapped past the 2^31 rule.
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
using h = tj::f16;
using GH = examples::Gemm<h, h>;

namespace {

/// The library call on the interpreter with C poisoned, checked against f64 with one rounding to f16.
void run_f16(GH& gemm, const testing::GemmTN<h>& p, int offset = 0) {
  testing::run_rounded(tj::Device::interpreter(), gemm, p, offset);
}

}  // namespace

TEST_CASE("gemm_out16_f16_interpreter_matches_f64_on_every_path") {
  const auto dev = tj::Device::interpreter();
  const testing::GemmTN<h> aligned(270, 304, 136, 81), ragged(270, 300, 136, 83), small(8, 200, 256, 85), split(8, 64, 2048, 87);
  for (const char* keep : {"BM=128 BN=256 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4",
                           "BM=128 BN=256 CLUSTER=2 PERSISTENT=1 STORE=1 WS=1 num_warps=8 num_stages=4"}) {
    CAPTURE(keep);
    GH gemm(dev, testing::keeping({keep}));
    run_f16(gemm, aligned);
    CHECK(gemm.report(aligned.M, aligned.N, aligned.K).best_config().str() == keep);
  }
  GH gemm(dev, testing::keeping({"BM=128 BN=256 PERSISTENT=1 WS=1 num_warps=8 num_stages=4"}));
  run_f16(gemm, ragged);       // 600-byte rows: the f32 race, then the rounding pass
  run_f16(gemm, aligned, 1);   // C 2-byte aligned: likewise
  run_f16(gemm, small);        // small M, one split: the kernel rounds into C
  CHECK(GH::small_m_for(split.M, split.N, split.K, dev.num_sms()).splits > 1);
  run_f16(gemm, split);        // small M, K split: SplitKReduce rounds
  // Narrow N, forced (f32 partial sums, rounded by SplitKReduce).
  const testing::GemmTN<h> narrow(200, 96, 512, 89);
  auto a = narrow.a, b = narrow.b;
  std::vector<h> c(static_cast<std::size_t>(narrow.M) * narrow.N, h(std::nanf("")));
  gemm.run_narrow_n(a.data(), b.data(), c.data(), narrow.M, narrow.N, narrow.K, GH::narrow_n_plan(narrow.M, narrow.N, narrow.K, 96, 2));
  narrow.check_rounded(c);
}

TEST_CASE("gemm_out16_f16_store_candidates_compile_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  const auto dev = tj::Device::interpreter();
  for (const auto& c : GH::store_candidates()) {
    const std::string what = c.config.str();
    CAPTURE(what);
    const auto core = c.make(dev, c.config);
    const auto g = core->source(testing::all_div16(core->ir()));
    CHECK(testing::has_diagnostic(g, c.config.param("BN") == 96 ? "tma_store not applied" : "stored by TMA"));
    CHECK(g.dynamic_shared_bytes <= 227 * 1024);
    testing::compiles_for_sm90a_without_spills(g.source, "store_f16_" + what + ".cu");
  }
}

TEST_CASE("gemm_out16_rejects_extents_whose_products_overflow") {
  const auto dev = tj::Device::interpreter();
  examples::Gemm<tj::bf16, tj::bf16> gemm(dev, testing::keeping({}));
  alignas(16) static tj::bf16 a[64], b[64], c[64];
  // M x N = 2^64 wraps to 0 in 64 bits; 2^62 x 4 likewise: both are far past C's 2^31 - 1 elements.
  for (auto [M, N] : {std::pair{1LL << 32, 1LL << 32}, std::pair{1LL << 62, 4LL}, std::pair{4LL, 1LL << 62}}) {
    CAPTURE(M);
    CAPTURE(N);
    CHECK_THROWS_WITH_AS(gemm(a, b, c, M, N, 64), doctest::Contains("2^31 - 1 elements"), tj::InvalidArgument);
  }
  // K x element size wraps to a multiple of 16 (2^62 x 2 = 2^63): K is past what A's descriptor can hold.
  CHECK_THROWS_WITH_AS(gemm(a, b, c, 1, 1, 1LL << 62), doctest::Contains("K = 4611686018427387904"), tj::InvalidArgument);
  // An operand past its descriptor's 2^31 - 1 elements is named as the user passed it, on the small-M path (which
  // takes B as its kernel's first argument) and the tuned one alike.
  CHECK_THROWS_WITH_AS(gemm(a, b, c, 1, 1LL << 20, 4096), doctest::Contains("gemm: B [N, K] = [1048576, 4096] has 4294967296 elements"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gemm(a, b, c, 1LL << 20, 64, 4096), doctest::Contains("gemm: A [M, K] = [1048576, 4096]"), tj::InvalidArgument);
}
