// The library GEMM's fixed paths (examples/gemm/gemm.hpp): small M through the swap-AB kernel
// (examples/gemm/matmul_small_m.hpp) and narrow N through rung 5's split-K kernel on 128-row blocks — the kernels
// compiled for sm_90a by NVRTC with no spills and within their shared-memory budget, the plans and the choice rule on
// the CPU, every element against f64 in the interpreter (forced plans and the library call), and on a Hopper GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
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

tj::TuneOptions quiet() {
  tj::TuneOptions o;
  o.cache_dir = std::filesystem::path{};  // no persistence
  o.warmup = 0;
  o.reps = 1;
  o.log = [](const std::string&) {};
  return o;
}

/// Operands on `dev` (copies on a GPU, the host vectors on the interpreter), C poisoned with NaN; run(a, b, c), then
/// p.check on C.
template <class Run>
void on_device(const tj::Device& dev, const Problem& p, Run&& run) {
  CAPTURE(p.M);
  CAPTURE(p.N);
  CAPTURE(p.K);
  const std::size_t cbytes = static_cast<std::size_t>(p.M) * p.N * 4;
  std::vector<float> c(static_cast<std::size_t>(p.M) * p.N, std::nanf(""));
  if (dev.backend() == tj::Backend::interpreter) {
    run(p.a.data(), p.b.data(), c.data());
  } else {
    auto* da = static_cast<tj::bf16*>(dev.alloc(p.a.size() * 2));
    auto* db = static_cast<tj::bf16*>(dev.alloc(p.b.size() * 2));
    auto* dc = static_cast<float*>(dev.alloc(cbytes));
    dev.copy_to_device(da, p.a.data(), p.a.size() * 2);
    dev.copy_to_device(db, p.b.data(), p.b.size() * 2);
    dev.memset(dc, 0xff, cbytes);  // NaN: every element must be written
    run(da, db, dc);
    dev.copy_to_host(c.data(), dc, cbytes);
    dev.free(da), dev.free(db), dev.free(dc);
  }
  p.check(c);
}

bool hopper(const tj::Device& dev) { return dev.backend() == tj::Backend::cuda && dev.compute_capability() >= 90; }

}  // namespace

TEST_CASE("gemm_small_m_kernels_compile_for_sm90a_without_spills_within_their_shared_memory") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  const auto target = tj::codegen::target_for("sm_90a");
  // The swap-AB kernels: B's [64, 64] and A's [BLOCK_M, 64] blocks both by TMA, wgmma m64nBLOCK_Mk16 from the ring;
  // per_sm programs of the ring's size (+ 1 KiB reserved each) fit in an H100/H200 SM's 228 KiB.
  auto small = [&](auto kernel, const G::SmallMKernel& k) {
    CAPTURE(k.block_m);
    const auto g = tj::codegen::generate(tj::trace(kernel), {}, target, {.num_warps = G::SMALL_M_BLOCK_N / 16, .num_stages = k.stages});
    CHECK(g.tma_params == std::vector<int>{0, 1});
    CHECK(g.source.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(k.block_m) + "k16.f32.bf16.bf16") != std::string::npos);
    CHECK(testing::has_diagnostic(g, "TMA pipeline of " + std::to_string(k.stages) + " stage(s)"));
    CHECK(k.per_sm * (g.dynamic_shared_bytes + 1024) <= 228 * 1024);
    CHECK((k.per_sm + 1) * (g.dynamic_shared_bytes + 1024) > 228 * 1024);  // per_sm is all that fit
    testing::compiles_for_sm90a_without_spills(g.source, "small_m_" + std::to_string(k.block_m) + ".cu");
  };
  static_assert(G::SMALL_M_KERNELS.size() == 5);
  small(examples::MatmulSmallM<64, 8, tj::bf16>{}, G::SMALL_M_KERNELS[0]);
  small(examples::MatmulSmallM<64, 16, tj::bf16>{}, G::SMALL_M_KERNELS[1]);
  small(examples::MatmulSmallM<64, 32, tj::bf16>{}, G::SMALL_M_KERNELS[2]);
  small(examples::MatmulSmallM<64, 64, tj::bf16>{}, G::SMALL_M_KERNELS[3]);
  small(examples::MatmulSmallM<64, 128, tj::bf16>{}, G::SMALL_M_KERNELS[4]);
  // The narrow-N kernels: rung 5's split-K on 128-row blocks, one program per SM.
  auto narrow = [&](auto kernel, const G::NarrowNKernel& k) {
    CAPTURE(k.block_n);
    const auto g = tj::codegen::generate(tj::trace(kernel), {}, target, {.num_warps = G::NARROW_N_BLOCK_M / 16, .num_stages = k.stages});
    CHECK(g.tma_params == std::vector<int>{0, 1});
    CHECK(testing::has_diagnostic(g, "TMA pipeline of " + std::to_string(k.stages) + " stage(s)"));
    CHECK(g.dynamic_shared_bytes <= 227 * 1024);
    testing::compiles_for_sm90a_without_spills(g.source, "narrow_n_" + std::to_string(k.block_n) + ".cu");
  };
  static_assert(G::NARROW_N_KERNELS.size() == 4);
  narrow(examples::MatmulV5SplitK<128, 64, tj::bf16>{}, G::NARROW_N_KERNELS[0]);
  narrow(examples::MatmulV5SplitK<128, 96, tj::bf16>{}, G::NARROW_N_KERNELS[1]);
  narrow(examples::MatmulV5SplitK<128, 128, tj::bf16>{}, G::NARROW_N_KERNELS[2]);
  narrow(examples::MatmulV5SplitK<128, 192, tj::bf16>{}, G::NARROW_N_KERNELS[3]);
  // The swap-AB kernel's other input types (128-byte K rows in each): f8 (k32 steps), f32 as tf32 (k8).
  for (const auto& g : {tj::codegen::generate(tj::trace(examples::MatmulSmallM<64, 16, tj::f8e4m3>{}), {}, target, {.num_warps = 4, .num_stages = 7}),
                        tj::codegen::generate(tj::trace(examples::MatmulSmallM<64, 8, float>{}), {}, target, {.num_warps = 4, .num_stages = 8})}) {
    CHECK(g.tma_params == std::vector<int>{0, 1});
    testing::compiles_for_sm90a(g.source, "small_m_other_types.cu");
  }
  // Off sm_90a the blocks are masked loads and the dot mma.sync (sm_80) or MFMA (AMD: 16 columns at least, so the
  // library takes BLOCK_M = 16 there for M <= 8; [64 x 8] is refused with a reason).
  const auto r80 = tj::compile_for_arch<examples::MatmulSmallM<64, 8, tj::bf16>>("sm_80", {.num_warps = 4});
  CHECK(!r80.binary.bytes.empty());
  if (tj::runtime::compiler_available(tj::runtime::Compiler::hiprtc, &why)) {
    const auto r942 = tj::compile_for_arch<examples::MatmulSmallM<64, 16, tj::bf16>>("gfx942", {.num_warps = 4});
    CHECK(r942.binary.format == "hsaco");
    CHECK_THROWS_WITH_AS(tj::codegen::generate(tj::trace(examples::MatmulSmallM<64, 8, tj::bf16>{}), {}, tj::codegen::target_for("gfx942"),
                                               {.num_warps = 4}),
                         doctest::Contains("fits neither MFMA 32x32 nor 16x16 tiles (32x32: N = 8 is not a multiple of 32"), tj::Unsupported);
  }
}

TEST_CASE("gemm_small_m_plan_and_choice_rule") {
  const int sms = 132;  // the H200
  auto splits_of = [&](long long M, long long N, long long K) { return G::small_m_for(M, N, K, sms).splits; };
  // Llama-3-8B projections at M = 1 and 16 (QKV, o_proj, gate+up, down): B tiles of 64 rows, at least 2 x 132
  // programs (3 fit per SM); gate+up's 448 tiles need no split.
  for (long long M : {1, 5, 16}) {
    CAPTURE(M);
    CHECK(G::small_m_for(M, 6144, 4096, sms).block_m == (M <= 8 ? 8 : 16));
    CHECK(G::small_m_for(M, 6144, 4096, sms).tiles == 96);
    CHECK(splits_of(M, 6144, 4096) == 3);
    CHECK(splits_of(M, 4096, 4096) == 5);
    CHECK(G::small_m_for(M, 4096, 4096, sms).k_split == 13 * 64);
    CHECK(splits_of(M, 28672, 4096) == 1);
    CHECK(splits_of(M, 4096, 14336) == 5);
    CHECK(G::path_for(M, 28672, 4096, sms) == G::Path::small_m);  // M <= 16: always, split or not
  }
  // 16 < M <= 128: only where the former split-K path went (few tiles, K long enough to split).
  CHECK(G::small_m_for(128, 4096, 4096, sms).block_m == 128);
  CHECK(splits_of(128, 4096, 4096) == 4);                       // 64 tiles x 4 = 256 programs, two fit per SM
  CHECK(splits_of(128, 4096, 14336) == 4);
  CHECK(G::small_m_for(40, 4096, 4096, sms).block_m == 64);
  CHECK(G::path_for(128, 6144, 4096, sms) == G::Path::tuned);   // 96 tiles of 64 x 128: the race
  CHECK(G::path_for(128, 28672, 4096, sms) == G::Path::tuned);
  CHECK(G::path_for(64, 28672, 4096, sms) == G::Path::tuned);
  CHECK(G::path_for(70, 200, 72, sms) == G::Path::tuned);       // K of two steps: nothing to split
  CHECK(G::path_for(129, 64, 4096, sms) != G::Path::small_m);
  CHECK(G::path_for(4096, 4096, 4096, sms) == G::Path::tuned);
  CHECK(G::small_m_for(1, 128, 4096, sms).splits == 16);       // two tiles: 16 splits of 4 steps, the most
  CHECK(G::small_m_for(1, 4096, 128, sms).splits == 1);        // two K steps: no split
  CHECK(G::small_m_for(1, 4096, 8, sms).splits == 1);          // K shorter than one step
  CHECK(G::small_m_for(1, 4096, 8, sms).k_split == 64);
  // Invariants over a grid of shapes.
  for (long long M : {1, 3, 8, 9, 16, 17, 33, 64, 65, 100, 128})
    for (long long N : {8, 64, 100, 1000, 4096, 6144, 28672})
      for (long long K : {8, 64, 200, 1024, 4096, 14336}) {
        const auto p = G::small_m_for(M, N, K, sms);
        if (!p.block_m) continue;
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CHECK(p.block_m >= M);
        for (const G::SmallMKernel& k : G::SMALL_M_KERNELS) CHECK((k.block_m >= p.block_m || k.block_m < M));  // the smallest
        CHECK(p.tiles == tj::cdiv(N, 64));
        CHECK(p.k_split % G::BLOCK_K == 0);
        CHECK((p.splits - 1) * p.k_split < K);
        CHECK(p.splits * p.k_split >= K);
        CHECK(p.splits <= 16);
        CHECK((p.splits == 1 || p.k_split >= 4 * G::BLOCK_K));
        CHECK((p.splits == 1 || p.tiles * p.splits <= p.per_sm * sms));
        CHECK((p.splits == 1 || p.splits * M * N * 4 <= std::max(N * K * 2 / 8, 8LL << 20)));
        CHECK((M <= 16 || p.splits >= 2));
      }
}

TEST_CASE("gemm_narrow_n_plan_and_choice_rule") {
  const int sms = 132;
  // M = K = 8192, N = 96 / 192: 64 blocks of 128 rows, two K splits: 128 programs, one per SM.
  for (long long N : {96, 192}) {
    const auto p = G::narrow_n_for(8192, N, 8192, sms);
    CAPTURE(N);
    CHECK(p.block_n == N);
    CHECK(p.tiles == 64);
    CHECK(p.splits == 2);
    CHECK(p.k_split == 4096);
    CHECK(G::path_for(8192, N, 8192, sms) == G::Path::tuned);  // the race: the plan measured slower (v0.7)
  }
  CHECK(G::narrow_n_for(8192, 64, 8192, sms).block_n == 64);
  CHECK(G::narrow_n_for(8192, 65, 8192, sms).block_n == 96);
  CHECK(G::narrow_n_for(8192, 100, 8192, sms).block_n == 128);
  CHECK(G::narrow_n_for(8192, 150, 8192, sms).block_n == 192);
  CHECK(G::narrow_n_for(4096, 96, 4096, sms).splits == 4);      // 32 blocks: 4 splits fill 128 SMs
  CHECK(G::narrow_n_for(8192, 193, 8192, sms).block_n == 0);   // wider than 192
  CHECK(G::narrow_n_for(16384, 96, 8192, sms).block_n == 0);    // 128 blocks: enough programs already
  CHECK(G::narrow_n_for(8192, 96, 512, sms).block_n == 0);      // 8 K steps: too short to split
  CHECK(G::narrow_n_for(8192, 192, 1024, sms).block_n == 0);    // the partial sums would pass a quarter of A
  CHECK(G::path_for(16, 96, 8192, sms) == G::Path::small_m);    // small M first
  for (long long M : {200, 1000, 4096, 8192, 8448})
    for (long long N : {8, 64, 96, 150, 192})
      for (long long K : {512, 1024, 4096, 8192, 14336}) {
        const auto p = G::narrow_n_for(M, N, K, sms);
        if (!p.block_n) continue;
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CHECK(p.block_n >= N);
        CHECK(p.tiles * p.splits <= sms);
        CHECK(p.splits >= 2);
        CHECK((p.splits - 1) * p.k_split < K);
        CHECK(p.splits * p.k_split >= K);
        CHECK(p.k_split >= 8 * G::BLOCK_K);
        CHECK(p.splits * M * N * 4 <= M * K * 2 / 4);
      }
}

TEST_CASE("gemm_fixed_paths_describe_themselves_and_check_forced_plans") {
  const int sms = 132;
  CHECK(G::describe(1, 4096, 4096, sms) == "the small-M kernel (swap AB: [64 x 8] tiles of C^T, 8 stages; split-K 5 x 832 + reduce)");
  CHECK(G::describe(1, 28672, 4096, sms) == "the small-M kernel (swap AB: [64 x 8] tiles of C^T, 8 stages; no split)");
  CHECK(G::describe(8192, 96, 8192, sms).empty());  // narrow N: the race
  CHECK(G::describe(4096, 4096, 4096, sms).empty());
  // report() of a fixed path says why there is none.
  const auto dev = tj::Device::interpreter();
  G gemm(dev, quiet());
  REQUIRE(G::path_for(1, 128, 4096, dev.num_sms()) == G::Path::small_m);
  CHECK_THROWS_WITH_AS(gemm.report(1, 128, 4096), doctest::Contains("runs the small-M kernel"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gemm.report(1, 128, 4096), doctest::Contains("a fixed kernel: it has no tuning report"), tj::InvalidArgument);
  // Plans are built by the plan functions; a plan of another shape, or a block size without a kernel, is refused.
  CHECK_THROWS_WITH_AS(G::small_m_plan(1, 64, 64, 24, 1), doctest::Contains("BLOCK_M = 24"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(G::narrow_n_plan(256, 64, 64, 80, 1), doctest::Contains("BLOCK_N = 80"), tj::InvalidArgument);
  CHECK(G::small_m_plan(1, 4096, 4096, 8, 100).splits == 64);  // clamped to K's steps
  CHECK(G::small_m_plan(1, 4096, 4096, 8, 0).splits == 1);
  alignas(16) static tj::bf16 a[16 * 256], b[64 * 256];
  alignas(16) static float c[16 * 64];
  auto p = G::small_m_plan(16, 64, 256, 16, 2);
  p.k_split = 64;
  CHECK_THROWS_WITH_AS(gemm.run_small_m(a, b, c, 16, 64, 256, p), doctest::Contains("does not fit this shape"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gemm.run_small_m(a, b, c, 16, 64, 256, G::small_m_plan(16, 128, 256, 16, 2)), doctest::Contains("does not fit"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gemm.run_narrow_n(a, b, c, 16, 64, 256, G::narrow_n_plan(16, 64, 512, 64, 2)), doctest::Contains("does not fit"),
                       tj::InvalidArgument);
  // The library's argument rules hold on the forced paths too.
  CHECK_THROWS_WITH_AS(gemm.run_small_m(a + 1, b, c, 16, 64, 256, G::small_m_plan(16, 64, 256, 16, 1)), doctest::Contains("16-byte aligned"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gemm.run_narrow_n(a, b, c, 16, 64, 60, G::narrow_n_plan(16, 64, 60, 64, 1)), doctest::Contains("multiple of 16 bytes"),
                       tj::InvalidArgument);
}

TEST_CASE("gemm_small_m_interpreter_forced_plans_match_f64") {
  const auto dev = tj::Device::interpreter();
  G gemm(dev, quiet());
  struct Case {
    int M, N, K, block_m, splits;
  };
  // M = 1, 5, 16 with their own BLOCK_M; ragged N (100, 136) and K (520 = 8 steps + 8, 200, 584 = 9 steps + 8: a last
  // split of 8 elements); N = 96; one split and several (the last one short); BLOCK_M below M (several row blocks);
  // 40 and 100 rows on the 64 and 128 kernels.
  const Case cases[] = {{1, 100, 1024, 8, 1},  {1, 100, 1024, 8, 3}, {5, 136, 520, 8, 2},   {16, 96, 200, 16, 1},
                        {16, 96, 584, 16, 4}, {20, 72, 256, 8, 2}, {40, 130, 192, 64, 3}, {100, 64, 328, 128, 2}};
  for (const Case& k : cases) {
    CAPTURE(k.block_m);
    CAPTURE(k.splits);
    const Problem p(k.M, k.N, k.K, static_cast<unsigned>(k.M * 7 + k.N + k.K));
    const auto plan = G::small_m_plan(k.M, k.N, k.K, k.block_m, k.splits);
    CHECK(plan.splits == k.splits);
    on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) { gemm.run_small_m(a, b, c, k.M, k.N, k.K, plan); });
  }
}

TEST_CASE("gemm_narrow_n_interpreter_forced_plans_match_f64") {
  const auto dev = tj::Device::interpreter();
  G gemm(dev, quiet());
  struct Case {
    int M, N, K, block_n, splits;
  };
  // N = 96 exact and ragged against each block width; ragged M (200 = 128 + 72) and K (1032 = 16 steps + 8).
  const Case cases[] = {{200, 96, 1032, 96, 2}, {130, 70, 1024, 96, 3}, {128, 150, 520, 192, 2}, {64, 64, 512, 64, 2}, {136, 100, 384, 128, 1}};
  for (const Case& k : cases) {
    CAPTURE(k.block_n);
    CAPTURE(k.splits);
    const Problem p(k.M, k.N, k.K, static_cast<unsigned>(k.M * 5 + k.N + k.K));
    const auto plan = G::narrow_n_plan(k.M, k.N, k.K, k.block_n, k.splits);
    CHECK(plan.splits == k.splits);
    on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) { gemm.run_narrow_n(a, b, c, k.M, k.N, k.K, plan); });
  }
}

TEST_CASE("gemm_library_interpreter_takes_the_small_m_and_narrow_n_paths") {
  const auto dev = tj::Device::interpreter();
  const int sms = dev.num_sms();
  CAPTURE(sms);
  G gemm(dev, quiet());
  // Small M: always for M <= 16; split when the SMs ask for it (two tiles here: yes, for any SM count above 1).
  for (const Problem& p : {Problem(1, 100, 1024, 61), Problem(5, 136, 520, 62), Problem(16, 96, 200, 63)}) {
    REQUIRE(G::path_for(p.M, p.N, p.K, sms) == G::Path::small_m);
    on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) { gemm(a, b, c, p.M, p.N, p.K); });
  }
  CHECK(G::small_m_for(1, 100, 1024, sms).splits == std::min(4, sms));  // 16 K steps: at most 4 splits of 4
  // Narrow N: 128-row blocks filling at most half the "SMs" (the interpreter's threads; at most 8 blocks here), K of
  // 32 steps: 2 to 4 splits.
  if (sms < 2) {
    MESSAGE("one interpreter thread: no narrow-N shape fills at most half of it");
    return;
  }
  const int M = 128 * std::min(sms / 2, 8);
  const Problem p(M, 40, 2048, 64);
  CHECK(G::path_for(M, 40, 2048, sms) == G::Path::tuned);  // narrow N is never taken by itself: run_narrow_n
  const auto plan = G::narrow_n_for(M, 40, 2048, sms);
  CHECK(plan.block_n == 64);
  CHECK(plan.splits >= 2);
  on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) { gemm.run_narrow_n(a, b, c, M, 40, 2048, plan); });
}

TEST_CASE("gemm_small_m_and_narrow_n_gpu_match_f64") {
  auto dev = tj::Device::best();
  if (!hopper(dev)) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  G gemm(dev, quiet());
  const int sms = dev.num_sms();
  // The library call on each path: decode shapes (M = 1, 5, 16, ragged N and K, N = 96) and the old split-K domain at
  // M = 128; narrow N at M = K = 8192-like sizes, ragged.
  const Problem small[] = {Problem(1, 4096, 4096, 71), Problem(5, 1000, 1032, 72), Problem(16, 96, 2048, 73), Problem(16, 6144, 520, 74),
                           Problem(128, 768, 2048, 75), Problem(40, 1000, 4096, 76)};
  for (const Problem& p : small) {
    CAPTURE(G::describe(p.M, p.N, p.K, sms));
    CHECK(G::path_for(p.M, p.N, p.K, sms) == G::Path::small_m);
    on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) { gemm(a, b, c, p.M, p.N, p.K); });
  }
  const Problem narrow[] = {Problem(2000, 96, 4104, 81), Problem(1024, 192, 4096, 82), Problem(1000, 150, 8192, 83), Problem(3000, 64, 1024, 84)};
  for (const Problem& p : narrow) {
    const auto plan = G::narrow_n_for(p.M, p.N, p.K, sms);
    CAPTURE(plan.block_n);
    CAPTURE(plan.splits);
    REQUIRE(plan.block_n > 0);
    on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) { gemm.run_narrow_n(a, b, c, p.M, p.N, p.K, plan); });
  }
  // Every small-M kernel and split count forced, ragged M within the block and across two row blocks.
  for (int bm : {8, 16, 32, 64, 128})
    for (int splits : {1, 3}) {
      CAPTURE(bm);
      CAPTURE(splits);
      const int M = bm == 8 ? 3 : bm - 5;
      const Problem p(M, 1000, 1032, static_cast<unsigned>(90 + bm + splits));
      on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) {
        gemm.run_small_m(a, b, c, M, 1000, 1032, G::small_m_plan(M, 1000, 1032, bm, splits));
      });
      const Problem q(bm + 3, 200, 520, static_cast<unsigned>(95 + bm + splits));
      on_device(dev, q, [&](const tj::bf16* a, const tj::bf16* b, float* c) {
        gemm.run_small_m(a, b, c, bm + 3, 200, 520, G::small_m_plan(bm + 3, 200, 520, bm, splits));
      });
    }
  // Every narrow-N kernel forced.
  for (int bn : {64, 96, 128, 192}) {
    CAPTURE(bn);
    const Problem p(300, bn - 3, 2056, static_cast<unsigned>(100 + bn));
    on_device(dev, p, [&](const tj::bf16* a, const tj::bf16* b, float* c) {
      gemm.run_narrow_n(a, b, c, 300, bn - 3, 2056, G::narrow_n_plan(300, bn - 3, 2056, bn, 3));
    });
  }
}
