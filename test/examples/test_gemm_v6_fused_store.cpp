// GEMM rung 6 with the whole fused epilogue stored through TMA (examples::MatmulV6FusedStore): alpha, bias, an
// activation and the cast, then the TMA store (CompileOptions::tma_store). The interpreter against f64 on ragged
// shapes, the sm_90a text (the activation's exp2 before the staging writes, one bulk tensor store per slab, no masked
// global store), NVRTC + ptxas without spills, sm_80 and gfx942 (the masked store), and the GPU against f64 with C
// poisoned and a frame of guard cells around it (skips without a GPU).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "examples/gemm/matmul_v6.hpp"
#include "test/common/activations.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

using examples::Act;
using testing::on_device;

/// MatmulV6FusedStore on `dev` with `programs` programs (0: persistent_grid). C sits in a larger NaN-poisoned buffer
/// (pitch > N, extra rows): every element of C written, within Out's rounding plus the accumulation error, and
/// nothing written outside it.
template <int BM, int BN, Act ACT, class Out>
void run_fused_store(const tj::Device& dev, int M, int N, int K, int stages, bool ws, int programs, float alpha = 0.5f) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(static_cast<int>(ACT));
  CAPTURE(ws);
  CAPTURE(testing::fresh_seed());
  testing::GemmTN<tj::bf16> p(M, N, K, static_cast<unsigned>(M * 7 + N + K));
  auto bias = testing::random_floats(static_cast<std::size_t>(N), -1, 1, 41);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  const int ld = (N + 8 + 7) / 8 * 8, rows = M + 3;
  std::vector<Out> c(static_cast<std::size_t>(rows) * ld, Out(std::nanf("")));
  tj::bf16* da = on_device(dev, p.a);
  tj::bf16* db = on_device(dev, p.b);
  float* dbias = on_device(dev, bias);
  Out* dc = on_device(dev, c);
  D a(dev, da, tj::DType::bf16, {M, K}, {K, 1}, {BM, 64}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::DType::bf16, {N, K}, {K, 1}, {BN, 64}, {.swizzle = D::Swizzle::b128});
  D cd(dev, dc, tj::dtype_v<Out>, {M, N}, {ld, 1}, {BM, 128 / static_cast<int>(sizeof(Out))}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV6FusedStore<BM, BN, tj::bf16, ACT, Out>>(
      dev, {.num_warps = BM / 16, .num_stages = stages, .warp_specialize = ws, .tma_store = true});
  const tj::Grid grid = programs > 0 ? tj::Grid{programs} : examples::persistent_grid(M, N, BM, BN, dev.num_sms());
  k.launch(grid, a, b, dbias, cd, alpha, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(Out));
    dev.free(da), dev.free(db), dev.free(dbias), dev.free(dc);
  }
  const double rnd = std::is_same_v<Out, float> ? 1e-6 : 1.0 / 128;  // bf16 keeps 8 significant bits
  // activation slopes are below 1.2: the accumulation error passes through at most doubled
  const auto r = testing::check_framed(
      c, rows, ld, M, N, [&](std::size_t x) { return testing::act_ref(ACT, alpha * p.ref[x] + bias[x % static_cast<std::size_t>(N)]); },
      [&](std::size_t x, double want) { return rnd * std::abs(want) + 2 * alpha * (1e-6 + K * 6e-8) * p.mag[x] + 1e-5; });
  CHECK(r.unwritten == 0);
  CHECK(r.outside == 0);
  CHECK(r.spilled == 0);
}

tj::codegen::Generated fused_store_source(auto kernel, const char* arch, int warps, int stages, bool ws) {
  const tj::ir::Kernel k = tj::trace(kernel);
  return tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for(arch),
                               {.num_warps = warps, .num_stages = stages, .warp_specialize = ws, .tma_store = true});
}

}  // namespace

TEST_CASE("gemm_v6_fused_store_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_fused_store<64, 64, Act::gelu_tanh, tj::bf16>(dev, 150, 170, 72, 3, false, 4);  // ragged M, N; 3 x 3 tiles on 4 programs
  run_fused_store<64, 64, Act::silu, float>(dev, 130, 100, 136, 3, true, 2);
  run_fused_store<64, 64, Act::relu, tj::bf16>(dev, 60, 64, 64, 3, true, 3);  // more programs than tiles
}

TEST_CASE("gemm_v6_fused_store_sm90a_applies_the_epilogue_then_stores_with_tma") {
  const auto g = fused_store_source(examples::MatmulV6FusedStore<128, 256, tj::bf16, Act::gelu_tanh>{}, "sm_90a", 8, 3, true);
  const std::string& src = g.source;
  REQUIRE(testing::has_diagnostic(g, "warp specialised"));
  REQUIRE(testing::has_diagnostic(g, "stored by TMA"));
  // A, B and C through TMA (the bias is a pointer), C with the box of its 128-byte slabs.
  REQUIRE(g.tma_params.size() == 3);
  CHECK(g.tma_params[2] == 3);
  CHECK(g.tma_boxes[2] == std::array<int, 2>{128, 64});
  const std::size_t act = src.find("tj_exp2(");  // GELU's tanh through exp2
  const std::size_t staged = src.find("(tj_smem_raw + ");
  const std::size_t issue = src.find("tj_tma_store_2d(&s");
  REQUIRE(act != std::string::npos);
  REQUIRE(staged != std::string::npos);
  REQUIRE(issue != std::string::npos);
  CHECK(act < staged);
  CHECK(staged < issue);
  CHECK(testing::occurrences(src, "tj_tma_store_2d(&s") == 4);  // 256 bf16 columns: four slabs
  CHECK(src.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") != std::string::npos);
  testing::compiles_for_sm90a_without_spills(src, "v6_fused_store_128x256_gelu.cu");
  testing::compiles_for_sm90a_without_spills(
      fused_store_source(examples::MatmulV6FusedStore<128, 128, tj::bf16, Act::silu, float>{}, "sm_90a", 8, 3, true).source,
      "v6_fused_store_128x128_silu_f32.cu");
}

TEST_CASE("gemm_v6_fused_store_compiles_off_hopper_as_a_masked_store") {
  for (const char* arch : {"sm_80", "gfx942"}) {
    CAPTURE(arch);
    const auto g = fused_store_source(examples::MatmulV6FusedStore<64, 64, tj::bf16, Act::relu>{}, arch, 4, 3, false);
    CHECK(g.source.find("cp.async.bulk.tensor") == std::string::npos);
    const auto r = tj::compile_for_arch<examples::MatmulV6FusedStore<64, 64, tj::bf16, Act::relu>>(arch, {.num_warps = 4, .tma_store = true});
    CHECK(!r.binary.bytes.empty());
  }
}

TEST_CASE("gemm_v6_fused_store_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("skipping: needs an sm_90 CUDA device");
    return;
  }
  using bf = tj::bf16;
  for (bool ws : {true, false}) {
    run_fused_store<128, 256, Act::gelu_tanh, bf>(dev, 512, 768, 1024, 3, ws, 3);  // 4 x 3 tiles on 3 programs
    run_fused_store<128, 256, Act::silu, bf>(dev, 300, 712, 200, 3, ws, 2);        // ragged: TMA clips the edge tiles
  }
  run_fused_store<128, 256, Act::relu, bf>(dev, 300, 700, 200, 3, true, 2);       // rows end mid chunk: masked stores
  run_fused_store<128, 128, Act::gelu_tanh, float>(dev, 300, 260, 64 * 7, 3, true, 0);
  run_fused_store<128, 256, Act::gelu_tanh, bf>(dev, 2048, 2048, 2048, 4, true, 0, 0.03f);
}
