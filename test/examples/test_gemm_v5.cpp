// GEMM rung 5 (examples/gemm/matmul_v5.hpp): tensor descriptors in the DSL
// (desc.load, trans), the descriptor lowering used off sm_90a, the TMA +
// mbarrier pipeline on sm_90a, and launch-time descriptor checks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <vector>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "examples/gemm/gemm.hpp"
#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v3.hpp"
#include "examples/gemm/matmul_v4.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "test/common/activations.hpp"
#include "test/common/codegen.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"
#include "tilejit/ir/lower_descriptors.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

/// C = A·Bᵀ with A [M, K] and B [N, K], reference in f64 over the rounded inputs.
template <class T>
struct ProblemTN {
  int M, N, K;
  std::vector<T> a, b;
  std::vector<double> ref;
  static T make(float x) {
    if constexpr (std::is_same_v<T, std::int8_t>) return static_cast<std::int8_t>(std::lround(x * 127));  // i8: all of [-127, 127]
    else return T(x);
  }
  ProblemTN(int m, int n, int k, unsigned salt) : M(m), N(n), K(k) {
    for (float x : testing::random_floats(static_cast<std::size_t>(m) * k, -1, 1, salt)) a.push_back(make(x));
    for (float x : testing::random_floats(static_cast<std::size_t>(n) * k, -1, 1, salt + 1)) b.push_back(make(x));
    ref.assign(static_cast<std::size_t>(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int kk = 0; kk < k; ++kk)
          s += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(i) * k + kk])) *
               static_cast<float>(b[static_cast<std::size_t>(j) * k + kk]);
        ref[static_cast<std::size_t>(i) * n + j] = s;
      }
  }
};

template <int BM, int BN, class T, int BK_ = 128 / static_cast<int>(sizeof(T))>
void run_v5(const tj::Device& dev, int M, int N, int K, int stages, double tol, bool ws = false, const std::string& arch = {},
            bool cp_async = true) {
  CAPTURE(ws);
  CAPTURE(arch);
  CAPTURE(cp_async);
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(stages);
  CAPTURE(testing::fresh_seed());
  ProblemTN<T> p(M, N, K, static_cast<unsigned>(M * 3 + N + K));
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  using Out = tj::lang::dot_acc_t<T>;
  const std::size_t cbytes = static_cast<std::size_t>(M) * N * 4;
  // Poison: NaN for f32 (0xffffffff), 0x7f7f7f7f for i32 (no i8 product sum reaches it): every element must be written.
  constexpr unsigned char poison_byte = std::is_same_v<Out, float> ? 0xff : 0x7f;
  std::vector<Out> c(static_cast<std::size_t>(M) * N);
  std::memset(c.data(), poison_byte, cbytes);
  Out poison;
  std::memset(&poison, poison_byte, sizeof poison);
  T* da = p.a.data();
  T* db = p.b.data();
  Out* dc = c.data();
  if (gpu) {
    da = static_cast<T*>(dev.alloc(p.a.size() * sizeof(T)));
    db = static_cast<T*>(dev.alloc(p.b.size() * sizeof(T)));
    dc = static_cast<Out*>(dev.alloc(cbytes));
    dev.copy_to_device(da, p.a.data(), p.a.size() * sizeof(T));
    dev.copy_to_device(db, p.b.data(), p.b.size() * sizeof(T));
    dev.memset(dc, poison_byte, cbytes);
  }
  const tj::DType dt = tj::dtype_v<T>;
  using Kern = examples::MatmulV5<BM, BN, T, 8, BK_>;
  CAPTURE(Kern::BLOCK_K);
  // One 128-byte swizzle span per box (the host rule); a wider K step is copied as several boxes (the launch
  // re-encodes the box from the kernel's block).
  constexpr int BK = 128 / static_cast<int>(sizeof(T));
  D a(dev, da, dt, {M, K}, {K, 1}, {BM, BK}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, dt, {N, K}, {K, 1}, {BN, BK}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<Kern>(
      dev, {.num_warps = BM / 16, .num_stages = stages, .arch = arch, .warp_specialize = ws, .cp_async = cp_async});
  k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, a, b, dc, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, cbytes);
    dev.free(da), dev.free(db), dev.free(dc);
  }
  for (Out v : c) REQUIRE(std::memcmp(&v, &poison, sizeof v) != 0);
  if constexpr (std::is_same_v<Out, float>) {
    CHECK(testing::rel_error(c, p.ref) < tol);
  } else {  // i8 x i8 -> i32 is exact
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < c.size(); ++i) wrong += static_cast<double>(c[i]) != p.ref[i];
    CHECK(wrong == 0);
  }
}

/// MatmulV5Scaled: C = scale_a[i] · scale_b[j] · Σ A·Bᵀ with per-row scales of A and per-column scales of B
/// (per_tensor: every scale the same value), against f64; the C poisoned before the launch.
template <int BM, int BN, class T>
void run_v5_scaled(const tj::Device& dev, int M, int N, int K, bool per_tensor, double tol) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(per_tensor);
  CAPTURE(testing::fresh_seed());
  ProblemTN<T> p(M, N, K, static_cast<unsigned>(M * 5 + N + K));
  auto sa = testing::random_floats(static_cast<std::size_t>(M), 0.25f, 4.f, 91), sb = testing::random_floats(static_cast<std::size_t>(N), 0.25f, 4.f, 92);
  if (per_tensor) sa.assign(sa.size(), sa[0]), sb.assign(sb.size(), sb[0]);
  std::vector<double> ref(p.ref);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) ref[static_cast<std::size_t>(i) * N + j] *= double(sa[static_cast<std::size_t>(i)]) * sb[static_cast<std::size_t>(j)];
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  testing::Mirror m{dev, {}};
  T *da = m.up(p.a), *db = m.up(p.b);
  float *dsa = m.up(sa), *dsb = m.up(sb), *dc = m.up(c);
  constexpr int BK = examples::MatmulV5Scaled<BM, BN, T>::BLOCK_K;
  D a(dev, da, tj::dtype_v<T>, {M, K}, {K, 1}, {BM, BK}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::dtype_v<T>, {N, K}, {K, 1}, {BN, BK}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV5Scaled<BM, BN, T>>(dev, {.num_warps = BM / 16, .num_stages = 3});
  k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, a, b, dsa, dsb, dc, M, N, K);
  m.down();
  for (float v : c) REQUIRE(!std::isnan(v));  // every element written
  CHECK(testing::rel_error(c, ref) < tol);
}

/// NVRTC compiles `src` for `arch` to a non-empty binary; returns the compiler log.
std::string nvrtc_compiles(const std::string& src, const char* arch, std::vector<std::string> options = {}) {
  tj::runtime::JitRequest req;
  req.source = src;
  req.name = "v5.cu";
  req.arch = arch;
  req.options = std::move(options);
  const auto res = tj::runtime::compile(req);
  CHECK(!res.binary.bytes.empty());
  return res.log;
}

/// C[M, N] = A[M, K] · B[K, N] (C f32, i32 for i8), both through descriptors: A's [64, BK] blocks as operand a, B's
/// [BK, 64] blocks ([K, N], N contiguous) directly as operand b (MN-major); BK = 64 (bf16), 32 (f32), 128 (i8).
template <class T>
struct BlockDotKN {
  static constexpr int BK = sizeof(T) == 1 ? 128 : sizeof(T) == 2 ? 64 : 32;
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, 64, BK> a, tj::Desc<T, BK, 64> b, tj::Ptr<Out> c, tj::Size M, tj::Size N, tj::Size K) const {
    const tj::Int m0 = tj::program_id(0) * 64, n0 = tj::program_id(1) * 64;
    auto acc = tj::for_range(0, K, BK, tj::zeros<Out, 64, 64>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(m0, k0), b.load(k0, n0), acc); });
    auto rm = m0 + tj::arange<64>();
    auto rn = n0 + tj::arange<64>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// BlockDotKN<T> on fresh random inputs against f64, C poisoned with a sentinel first. nan_fill: A's descriptor
/// fills past the tensor with NaN, so with K not a multiple of BK every element of C must be NaN (the last K block
/// reads NaN columns of A); otherwise zero fill, and C matches the reference (i8: exactly; tf32: 5e-3).
template <class T = tj::bf16>
void run_block_dot_kn(const tj::Device& dev, int M, int N, int K, bool nan_fill, const std::string& arch = {}) {
  using Out = typename BlockDotKN<T>::Out;
  constexpr int BK = BlockDotKN<T>::BK;
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(BK);
  CAPTURE(nan_fill);
  CAPTURE(arch);
  CAPTURE(testing::fresh_seed());
  const ProblemTN<T> p(M, N, K, 31);  // a [M, K], b [N, K]: B's element (k, n) is b[n, k], stored below as [K, N]
  std::vector<T> bkn(static_cast<std::size_t>(K) * N);
  for (int kk = 0; kk < K; ++kk)
    for (int j = 0; j < N; ++j) bkn[static_cast<std::size_t>(kk) * N + j] = p.b[static_cast<std::size_t>(j) * K + kk];
  std::vector<T> a = p.a;
  // Unreachable by any result: f32 sums stay under K in magnitude; i8 sums under K · 127² < 0x7f7f7f7f.
  const Out sentinel = std::is_same_v<Out, float> ? Out(12345) : Out(0x7f7f7f7f);
  std::vector<Out> c(static_cast<std::size_t>(M) * N, sentinel);
  testing::Mirror m{dev, {}};
  T *da = m.up(a), *db = m.up(bkn);
  Out* dc = m.up(c);
  const tj::DType dt = tj::dtype_v<T>;
  D da_desc(dev, da, dt, {M, K}, {K, 1}, {64, BK}, {.oob_fill = nan_fill ? D::OobFill::nan : D::OobFill::zero});
  D db_desc(dev, db, dt, {K, N}, {N, 1}, {BK, 64});
  auto k = tj::compile<BlockDotKN<T>>(dev, {.num_warps = 4, .num_stages = 3, .arch = arch});
  k.launch(tj::Grid{tj::cdiv(M, 64), tj::cdiv(N, 64)}, da_desc, db_desc, dc, M, N, K);
  m.down();
  for (Out v : c) REQUIRE(v != sentinel);  // every element written
  if (nan_fill && K % BK != 0) {
    std::size_t finite = 0;
    for (Out v : c) finite += !std::isnan(static_cast<double>(v));
    CHECK(finite == 0);
  } else if constexpr (std::is_same_v<Out, float>) {
    CHECK(testing::rel_error(c, p.ref) < (std::is_same_v<T, float> ? 5e-3 : 1e-5));
  } else {
    std::size_t wrong = 0;
    for (std::size_t x = 0; x < c.size(); ++x) wrong += static_cast<double>(c[x]) != p.ref[x];
    CHECK(wrong == 0);
  }
}

std::string sm90_source(int stages) {
  auto ir = tj::trace(examples::MatmulV5<128, 256, tj::bf16>{});
  return tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = stages}).source;
}

}  // namespace

TEST_CASE("desc_load_lowers_to_masked_loads_and_trans_folds_into_them") {
  auto ir = tj::trace(examples::MatmulV5<64, 96, tj::bf16>{});
  int desc_loads = 0, trans = 0;
  for (const auto& n : ir.nodes) desc_loads += n.op == tj::ir::Op::desc_load, trans += n.op == tj::ir::Op::trans;
  CHECK(desc_loads == 2);
  CHECK(trans == 1);
  const auto low = tj::ir::lower_descriptors(ir);
  int loads = 0, left = 0;
  for (const auto& n : low.nodes) {
    loads += n.op == tj::ir::Op::load;
    left += n.op == tj::ir::Op::desc_load || n.op == tj::ir::Op::trans;
    if (n.op == tj::ir::Op::load) CHECK(n.args[1] >= 0);  // masked: out-of-bounds elements are zero
  }
  CHECK(loads == 2);
  CHECK(left == 0);  // the trans was folded into B's (transposed) pointer tile
  tj::ir::verify(low);
  // Keeping a load leaves it (and its trans) in place.
  const auto kept = tj::ir::lower_descriptors(ir, [&](int id) { return ir.nodes[static_cast<std::size_t>(id)].op == tj::ir::Op::desc_load; });
  CHECK(kept.nodes.size() == ir.nodes.size());
}

TEST_CASE("gemm_v5_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_v5<64, 64, tj::bf16>(dev, 64, 64, 64, 3, 1e-6);
  run_v5<64, 96, tj::bf16>(dev, 70, 96 * 2 - 30, 136, 3, 1e-6);  // N = 96 blocks, ragged M, N and K (K % 64 = 8)
  run_v5<64, 48, tj::f16>(dev, 130, 50, 72, 2, 1e-6);           // NPOT 48, ragged everything
  run_v5<128, 192, tj::bf16>(dev, 129, 200, 64, 4, 1e-6);
  run_v5<64, 96, tj::bf16, 128>(dev, 70, 96 * 2 - 30, 200, 3, 1e-6);  // 128-wide K steps, K % 128 = 72
}

TEST_CASE("fp8_host_conversions_round_to_nearest_even_and_saturate") {
  using tj::f8e4m3, tj::f8e5m2;
  CHECK(float(f8e4m3(1.0f)) == 1.0f);
  CHECK(f8e4m3(1.0f).bits == 0x38);
  CHECK(float(f8e4m3(448.0f)) == 448.0f);
  CHECK(float(f8e4m3(1e6f)) == 448.0f);   // satfinite
  CHECK(float(f8e4m3(-1e6f)) == -448.0f);
  CHECK(std::isnan(float(f8e4m3(std::nanf("")))));
  CHECK(float(f8e4m3(0.0625f * 1.0625f)) == 0.0625f);  // halfway between 0.0625 and 0.0703125: to even
  CHECK(float(f8e4m3(std::ldexp(1.0f, -9))) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(float(f8e4m3(std::ldexp(1.0f, -11))) == 0.0f);
  CHECK(float(f8e5m2(57344.0f)) == 57344.0f);
  CHECK(float(f8e5m2(1e9f)) == 57344.0f);
  CHECK(float(f8e5m2(1.25f)) == 1.25f);
  CHECK(float(f8e5m2(1.125f)) == 1.0f);   // halfway: to even
  CHECK(float(f8e5m2(1.375f)) == 1.5f);   // halfway: to even (1.5 has the even mantissa)
  for (int b = 0; b < 256; ++b) {  // every finite code round-trips
    const float x = f8e4m3::to_float(static_cast<std::uint8_t>(b));
    if (!std::isnan(x)) CHECK(f8e4m3::from_float(x) == (x == 0 ? (b & 0x80) : b));
  }
}

TEST_CASE("gemm_v5_f8_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_v5<64, 64, tj::f8e4m3>(dev, 64, 64, 128, 3, 1e-6);
  run_v5<64, 96, tj::f8e5m2>(dev, 70, 100, 272, 3, 1e-6);  // ragged M, N, K
}

TEST_CASE("gemm_v5_scaled_f8_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_v5_scaled<64, 64, tj::f8e4m3>(dev, 70, 100, 272, false, 1e-6);  // per-row / per-column scales, ragged M, N, K
  run_v5_scaled<64, 96, tj::f8e5m2>(dev, 64, 96, 128, true, 1e-6);    // per-tensor scales
}

TEST_CASE("gemm_v5_tf32_and_i8_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_v5<64, 64, float>(dev, 64, 64, 32 * 3, 3, 1e-6);
  run_v5<64, 96, float>(dev, 70, 100, 40, 2, 1e-6);          // ragged M, N, K (K % 32 = 8)
  run_v5<64, 64, std::int8_t>(dev, 64, 64, 128 * 2, 3, 0);
  run_v5<64, 96, std::int8_t>(dev, 65, 97, 144, 2, 0);        // ragged
}

TEST_CASE("gemm_v5_tf32_and_i8_lower_to_wgmma_on_sm90a") {
  std::string why;
  const bool nvrtc = tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why);
  auto check = [&](auto kernel, const char* instr) {
    CAPTURE(instr);
    const auto g = tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4});
    CHECK(g.source.find(instr) != std::string::npos);
    CHECK(g.tma_params == std::vector<int>{0, 1});
    if (!nvrtc) return;
    nvrtc_compiles(g.source, "sm_90a");
  };
  check(examples::MatmulV5<128, 128, float>{}, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32");
  check(examples::MatmulV5<128, 256, std::int8_t>{}, "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8");
  // (Off sm_90a they lower to mma.sync: gemm_v5_tf32_i8_f8_lower_to_mma_sync_off_hopper.)
}

TEST_CASE("gemm_v5_f8_sm90a_uses_qgmma_and_sm80_says_why_not") {
  auto ir = tj::trace(examples::MatmulV5<128, 256, tj::f8e4m3>{});
  const auto g = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4});
  CHECK(g.source.find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") != std::string::npos);
  CHECK(g.tma_params == std::vector<int>{0, 1});
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    nvrtc_compiles(g.source, "sm_90a");
    auto irs = tj::trace(examples::MatmulV5Scaled<128, 128, tj::f8e5m2>{});
    const auto scaled = tj::codegen::generate(irs, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4}).source;
    CHECK(scaled.find("m64n128k32.f32.e5m2.e5m2") != std::string::npos);
    nvrtc_compiles(scaled, "sm_90a");
  }
  CHECK_THROWS_WITH_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_80"), {.num_warps = 8}),
                       doctest::Contains("f8e4nv products need sm_89 or newer"), tj::Unsupported);
}

TEST_CASE("gemm_v5_tf32_i8_f8_lower_to_mma_sync_off_hopper") {
  // Off sm_90a the descriptor loads are masked loads and the products mma.sync: m16n8k8 for tf32, m16n8k32 for i8
  // (sm_80) and for e4m3 / e5m2 (sm_89: Ada's f8 mma.sync; the same on sm_90 without the a).
  auto gen = [](auto kernel, const char* arch) {
    return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for(arch), {.num_warps = 4}).source;
  };
  const std::string tf32 = gen(examples::MatmulV5<64, 64, float>{}, "sm_80");
  const std::string i8 = gen(examples::MatmulV5<64, 96, std::int8_t>{}, "sm_80");
  const std::string e4 = gen(examples::MatmulV5<64, 64, tj::f8e4m3>{}, "sm_89");
  const std::string e5 = gen(examples::MatmulV5<64, 64, tj::f8e5m2>{}, "sm_90");
  CHECK(tf32.find("tj_mma_tf32(") != std::string::npos);
  CHECK(tf32.find("m16n8k8 per thread") != std::string::npos);
  CHECK(i8.find("tj_mma_s8(") != std::string::npos);
  CHECK(e4.find("tj_mma_e4m3(") != std::string::npos);
  CHECK(e4.find("tj_ldsm_x4(") != std::string::npos);  // f8 blocks: cp.async ring, ldmatrix of 4-byte groups
  const std::string e4_regs = tj::codegen::generate(tj::trace(examples::MatmulV5<64, 64, tj::f8e4m3>{}), {},
                                                    tj::codegen::target_for("sm_89"), {.num_warps = 4, .cp_async = false}).source;
  CHECK(e4_regs.find("tj_pack_e4m3x4(") != std::string::npos);  // from registers: packed four to a word
  CHECK(e5.find("tj_mma_e5m2(") != std::string::npos);
  for (const std::string* src : {&tf32, &i8, &e4, &e5}) CHECK(src->find("wgmma.mma_async.sync") == std::string::npos);
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    nvrtc_compiles(tf32, "sm_80");
    nvrtc_compiles(i8, "sm_80");
    nvrtc_compiles(e4, "sm_89");
    nvrtc_compiles(e5, "sm_90");
  } else {
    MESSAGE("skipping NVRTC: ", why);
  }
}

TEST_CASE("gemm_v5_off_hopper_copies_blocks_with_a_cp_async_ring") {
  // sm_80 .. sm_90 without wgmma: A's and B's blocks go global -> shared memory by cp.async, num_stages deep, and
  // mma.sync reads its fragments there (A rows and B's [N, K] rows: one 32-bit word per register).
  auto ir = tj::trace(examples::MatmulV5<128, 128, tj::bf16>{});
  auto gen = [&](const char* arch, tj::codegen::Options o) { return tj::codegen::generate(ir, {}, tj::codegen::target_for(arch), o); };
  const auto g = gen("sm_80", {.num_warps = 8, .num_stages = 3});
  CHECK(testing::occurrences(g.source, "tj_cp_block<2, 128, 64, 256, 32704u>(") == 2);  // bf16 [128, 64] blocks, 256 threads
  CHECK(g.source.find("tj_cp_wait<1>(); __syncthreads();") != std::string::npos);        // 3 stages: 2 groups may be pending
  CHECK(testing::occurrences(g.source, "__syncthreads()") == 1);                         // one barrier per iteration
  CHECK(testing::occurrences(g.source, "tj_ldsm_x4(") == 1 + 4 * (2 + 4));  // the prelude, then per k step: 2 A row blocks, 8 B column blocks in pairs
  CHECK(g.source.find("tj_mma_bf16(") != std::string::npos);
  CHECK(g.source.find("mbarrier") == std::string::npos);
  CHECK(g.tma_params.empty());
  CHECK(g.dynamic_shared_bytes == 3 * 32768 + 1024);
  CHECK(testing::has_diagnostic(g, "cp.async pipeline of 3 stage(s) x 32768 bytes (2 block(s))"));
  // Two stages: the refill of iteration i + 1 is issued at the top of iteration i, right after its barrier, so it
  // is in flight during the iteration's math; three: at the end of the iteration (two groups are in flight then).
  const auto two = gen("sm_80", {.num_warps = 8, .num_stages = 2}).source;
  const auto wait2 = two.find("tj_cp_wait<0>(); __syncthreads();");
  REQUIRE(wait2 != std::string::npos);
  const auto refill2 = two.find("tj_issue", wait2);
  CHECK(refill2 < two.find("tj_ldsm_x4(", wait2));
  CHECK(two.find("tj_issue", refill2 + 1) == std::string::npos);  // and not again at the end
  const auto refill3 = g.source.find("tj_issue", g.source.find("tj_cp_wait<1>(); __syncthreads();"));
  CHECK(refill3 != std::string::npos);
  CHECK(refill3 > g.source.rfind("tj_mma_bf16("));
  // One stage: the copy of iteration i overwrites what iteration i - 1 read: a barrier before it.
  const auto one = gen("sm_80", {.num_warps = 8, .num_stages = 1}).source;
  CHECK(one.find("__syncthreads(); tj_issue") != std::string::npos);
  CHECK(one.find("tj_cp_wait<0>(); __syncthreads();") != std::string::npos);
  // Off: the masked loads of before (no dynamic shared memory, conversions to the operand layouts).
  const auto off = gen("sm_80", {.num_warps = 8, .num_stages = 3, .cp_async = false});
  CHECK(off.source.find("tj_cp_block") == std::string::npos);
  CHECK(off.dynamic_shared_bytes == 0);
  // No producer warp off Hopper: said, not applied.
  const auto ws = gen("sm_80", {.num_warps = 8, .num_stages = 3, .warp_specialize = true});
  CHECK(ws.threads == 256);
  CHECK(testing::has_diagnostic(ws, "warp specialisation not applied: target sm_80 has no TMA"));
  // The ring must fit the target's shared memory: sm_86 has 99 KiB per program. Four stages do not: the kernel is
  // made with masked loads, and says why.
  const auto big = gen("sm_86", {.num_warps = 8, .num_stages = 4});
  CHECK(big.source.find("tj_cp_block") == std::string::npos);
  CHECK(big.dynamic_shared_bytes == 0);
  CHECK(testing::has_diagnostic(big, "cp.async pipeline not applied: 4 stage(s) x 32768 bytes and 0 bytes of scratch need 132096 bytes"));
  CHECK(testing::has_diagnostic(big, "sm_86 allows 99 KiB per program (lower num_stages or the block sizes): masked loads"));
  // Consumer Blackwell (sm_120) has sm_86's 99 KiB, not Hopper's 227.
  CHECK(testing::has_diagnostic(gen("sm_120", {.num_warps = 8, .num_stages = 4}), "sm_120 allows 99 KiB per program"));
  CHECK(gen("sm_90", {.num_warps = 8, .num_stages = 4}).dynamic_shared_bytes == 4 * 32768 + 1024);
  // tf32: ldmatrix moves the f32 bits, each register rounded after.
  const auto tf32 = tj::codegen::generate(tj::trace(examples::MatmulV5<64, 64, float>{}), {}, tj::codegen::target_for("sm_80"),
                                          {.num_warps = 4}).source;
  CHECK(tf32.find("ta42_0[0] = tj_tf32(__uint_as_float(ta42_0[0]));") != std::string::npos);
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping NVRTC: ", why);
    return;
  }
  nvrtc_compiles(g.source, "sm_80");
  nvrtc_compiles(one, "sm_80");
  nvrtc_compiles(gen("sm_86", {.num_warps = 8, .num_stages = 3}).source, "sm_86");
  nvrtc_compiles(gen("sm_90", {.num_warps = 8, .num_stages = 4}).source, "sm_90");
  nvrtc_compiles(tf32, "sm_80");
}

TEST_CASE("cp_async_blocks_read_mn_major_b_and_fill_past_the_tensor") {
  // Products whose B block is [K, N] (no trans): mma.sync's B registers pair K rows. 16-bit: ldmatrix .trans;
  // f32 (tf32): one element per register; i8: four byte loads per register.
  auto gen = [](auto kernel) {
    return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4}).source;
  };
  const auto bf = gen(BlockDotKN<tj::bf16>{}), f32 = gen(BlockDotKN<float>{}), i8 = gen(BlockDotKN<std::int8_t>{});
  CHECK(bf.find("tj_ldsm_x4_t(tj_sa") != std::string::npos);
  CHECK(f32.find("tj_tf32(*(const float*)(tj_op") != std::string::npos);
  CHECK(i8.find("(unsigned)*(const unsigned char*)(tj_op") != std::string::npos);
  for (const std::string* src : {&bf, &f32, &i8}) CHECK(src->find("tj_cp_block<") != std::string::npos);
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why))
    for (const std::string* src : {&bf, &f32, &i8}) nvrtc_compiles(*src, "sm_80");
  // The interpreter runs the same IR (blocks as masked loads): the kernels' meaning, ragged K included.
  const auto dev = tj::Device::interpreter();
  run_block_dot_kn(dev, 100, 72, 200, false);
  run_block_dot_kn(dev, 64, 64, 72, true);
  run_block_dot_kn<float>(dev, 70, 64, 100, false);
  run_block_dot_kn<std::int8_t>(dev, 64, 80, 160, false);
}

TEST_CASE("gemm_cp_async_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 80) {
    MESSAGE("no NVIDIA GPU of sm_80 or newer: skipping");
    return;
  }
  // The device's own arch without the "a": mma.sync fed by the cp.async ring (on an H200, sm_90).
  const std::string arch = "sm_" + std::to_string(dev.compute_capability());
  run_v5<128, 128, tj::bf16>(dev, 512, 512, 1024, 3, 1e-5, false, arch);
  run_v5<128, 128, tj::bf16>(dev, 300, 700, 200, 3, 1e-5, false, arch);  // ragged M, N, K: chunks past K written by threads
  run_v5<128, 128, tj::bf16>(dev, 256, 256, 64 * 7, 1, 1e-5, false, arch);  // one stage
  run_v5<128, 128, tj::bf16>(dev, 256, 256, 64, 4, 1e-5, false, arch);       // fewer K steps than stages
  // Two stages: each iteration's refill issued at its top (codegen top_refill); one K step, two, and ragged K.
  run_v5<128, 128, tj::bf16>(dev, 256, 256, 64, 2, 1e-5, false, arch);
  run_v5<128, 128, tj::bf16>(dev, 256, 384, 128, 2, 1e-5, false, arch);
  run_v5<128, 128, tj::bf16>(dev, 300, 700, 1000, 2, 1e-5, false, arch);
  run_v5<64, 96, tj::f16>(dev, 1000, 192, 1000, 4, 1e-5, false, arch);
  run_v5<128, 128, tj::bf16>(dev, 300, 700, 200, 3, 1e-5, false, arch, false);  // cp_async off: masked loads
  run_block_dot_kn(dev, 300, 200, 328, false, arch);  // B [K, N] read MN-major from the ring
  run_block_dot_kn(dev, 130, 72, 200, true, arch);    // NaN fill past K
  run_block_dot_kn(dev, 130, 72, 192, true, arch);    // ... none needed: K a multiple of 64
  run_block_dot_kn<float>(dev, 200, 136, 300, false, arch);       // tf32, B MN-major: one f32 per register
  run_block_dot_kn<std::int8_t>(dev, 150, 64, 400, false, arch);  // i8, B MN-major: four byte loads per register
}

TEST_CASE("gemm_v5_sm90a_uses_tma_and_async_wgmma") {
  const std::string src = sm90_source(4);
  CHECK(src.find("cp.async.bulk.tensor.2d") != std::string::npos);
  CHECK(src.find("tj_tma_load_2d(") != std::string::npos);
  CHECK(src.find("mbarrier.try_wait.parity") != std::string::npos);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
  CHECK(src.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos);  // one group left in flight
  CHECK(src.find("const __grid_constant__ tj_desc arg0") != std::string::npos);
  // No register staging of operands: no 16-byte shared stores, no per-element loads of A or B.
  CHECK(src.find("*(tj_v16*)(tj_smem") == std::string::npos);
  auto ir = tj::trace(examples::MatmulV5<128, 256, tj::bf16>{});
  const auto g = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4});
  CHECK(g.dynamic_shared_bytes >= 4 * 48 * 1024);
  CHECK(g.dynamic_shared_bytes <= 227 * 1024);
  CHECK(g.tma_params == std::vector<int>{0, 1});
  bool said = false;
  for (const auto& d : g.diagnostics) said |= d.find("TMA pipeline of 4 stage(s)") != std::string::npos;
  CHECK(said);
  // Too many stages for shared memory: a clear error, not a launch failure.
  CHECK_THROWS_WITH_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 5}),
                       doctest::Contains("227 KiB"), tj::Unsupported);
  CHECK_THROWS_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 0}),
                  tj::InvalidArgument);
  // One stage: no prefetch; each iteration issues its own copies.
  CHECK(sm90_source(1).find("if (tj_tid == 0) tj_issue") != std::string::npos);
}

TEST_CASE("gemm_v5_compiles_with_nvrtc_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto ptxas = [](const std::string& src, const char* arch) {
    const std::string log = nvrtc_compiles(src, arch, {"--ptxas-options=-v"});
    std::smatch m;
    REQUIRE(std::regex_search(log, m, std::regex(R"((\d+) bytes spill stores)")));
    CHECK(std::stoi(m[1]) == 0);
    CHECK(log.find("wgmma.mma_async instructions are serialized") == std::string::npos);
  };
  ptxas(sm90_source(4), "sm_90a");
  for (auto [bm, bn, nw] : {std::tuple{64, 96, 4}, std::tuple{128, 192, 8}}) {
    CAPTURE(bm);
    CAPTURE(bn);
    const auto ir = bn == 96 ? tj::trace(examples::MatmulV5<64, 96, tj::bf16>{}) : tj::trace(examples::MatmulV5<128, 192, tj::bf16>{});
    ptxas(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = nw, .num_stages = 4}).source, "sm_90a");
  }
  // sm_80: no TMA; the descriptor blocks are copied by cp.async (no tensor map) and the dot is mma.sync.
  const auto ir80 = tj::trace(examples::MatmulV5<64, 96, tj::f16>{});
  const auto g80 = tj::codegen::generate(ir80, {}, tj::codegen::target_for("sm_80"), {.num_warps = 4, .num_stages = 3});
  CHECK(g80.source.find("cp.async.bulk") == std::string::npos);
  CHECK(g80.source.find("tj_cp_block<") != std::string::npos);
  CHECK(g80.tma_params.empty());
  ptxas(g80.source, "sm_80");
  ptxas(tj::codegen::generate(tj::trace(examples::MatmulV5<128, 128, tj::bf16>{}), {}, tj::codegen::target_for("sm_80"),
                              {.num_warps = 8, .num_stages = 4}).source, "sm_80");
}

TEST_CASE("every_gemm_rung_compiles_for_amd_with_mfma") {
  // HIP text with MFMA (gfx942 through clang, gfx90a through hiprtc); compiled, never run here (no AMD GPU).
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::hiprtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto hip = [](auto kernel, int warps, const char* arch, const char* mfma) {
    CAPTURE(arch);
    CAPTURE(mfma);
    using K = decltype(kernel);
    const auto g = tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {.num_warps = warps});
    CHECK(g.source.find(mfma) != std::string::npos);
    bool staged = false;  // the diagnostics account for the shared memory the MFMA staging uses
    for (const auto& d : g.diagnostics) staged |= d.find("staged through") != std::string::npos;
    CHECK(staged);
    const auto r = tj::compile_for_arch<K>(arch, {.num_warps = warps});
    CHECK(r.binary.format == "hsaco");
    CHECK(!r.binary.bytes.empty());
  };
  hip(examples::MatmulV1<64, 64, 32, tj::bf16>{}, 4, "gfx942", "mfma_f32_32x32x8bf16_1k");
  hip(examples::MatmulV1<64, 96, 32, tj::f16>{}, 4, "gfx942", "mfma_f32_16x16x16f16");  // NPOT 96: 16x16 tiles
  hip(examples::MatmulV3<128, 192, tj::bf16>{}, 8, "gfx942", "mfma_f32_32x32x8bf16_1k");
  hip(examples::MatmulV4<64, 96, tj::bf16>{}, 4, "gfx942", "mfma_f32_16x16x16bf16_1k");
  hip(examples::MatmulV5<128, 128, tj::f16>{}, 4, "gfx942", "mfma_f32_32x32x8f16");
  hip(examples::MatmulV5<64, 96, tj::bf16>{}, 4, "gfx90a", "mfma_f32_16x16x16bf16_1k");
  // i8 (eight bytes a lane on CDNA3, four on CDNA2), f32 (full f32 products), f8 (CDNA3's FNUZ formats).
  hip(examples::MatmulV5<128, 128, std::int8_t>{}, 4, "gfx942", "mfma_i32_32x32x16_i8");
  hip(examples::MatmulV5<64, 96, std::int8_t>{}, 4, "gfx942", "mfma_i32_16x16x32_i8");
  hip(examples::MatmulV5<128, 128, std::int8_t>{}, 4, "gfx90a", "mfma_i32_32x32x8i8");
  hip(examples::MatmulV5<64, 64, float>{}, 4, "gfx942", "mfma_f32_32x32x2f32");
  hip(examples::MatmulV5<64, 96, float>{}, 4, "gfx90a", "mfma_f32_16x16x4f32");
  hip(examples::MatmulV5<128, 128, tj::f8e4m3>{}, 4, "gfx942", "mfma_f32_32x32x16_fp8_fp8");
  hip(examples::MatmulV5<64, 96, tj::f8e5m2>{}, 4, "gfx942", "mfma_f32_16x16x32_bf8_bf8");
  CHECK_THROWS_WITH_AS(tj::codegen::generate(tj::trace(examples::MatmulV5<64, 64, tj::f8e4m3>{}), {},
                                             tj::codegen::target_for("gfx90a"), {.num_warps = 4}),
                       doctest::Contains("needs gfx940 or newer"), tj::Unsupported);
}

TEST_CASE("mfma_f8_e4m3_is_staged_at_half_scale_and_e5m2_as_it_is") {
  // CDNA3's fp8 are FNUZ: e4m3 operands go in as v/2 (exact), the accumulator in as acc/4 and out x4; e5m2 as is.
  const auto e4 = tj::codegen::generate(tj::trace(examples::MatmulV5<128, 128, tj::f8e4m3>{}), {}, tj::codegen::target_for("gfx942"),
                                        {.num_warps = 4});
  CHECK(e4.source.find("__builtin_amdgcn_cvt_pk_fp8_f32((") != std::string::npos);
  CHECK(e4.source.find(") * 0.5f, 0.0f, 0, false)") != std::string::npos);
  CHECK(e4.source.find(" * 0.25f") != std::string::npos);
  CHECK(e4.source.find("] * 4.0f;") != std::string::npos);
  const auto e5 = tj::codegen::generate(tj::trace(examples::MatmulV5<128, 128, tj::f8e5m2>{}), {}, tj::codegen::target_for("gfx942"),
                                        {.num_warps = 4});
  CHECK(e5.source.find("__builtin_amdgcn_cvt_pk_bf8_f32(") != std::string::npos);
  CHECK(e5.source.find(") * 0.5f, 0.0f") == std::string::npos);
  CHECK(e5.source.find(" * 0.25f") == std::string::npos);
  // Exactness of the e4m3 rule, on the host: every finite OCP e4m3 value halved is an e4m3fnuz value (bias 8,
  // 3 mantissa bits, subnormals down to 2^-10, largest 240).
  auto fnuz_exact = [](double x) {
    if (x == 0) return true;
    const double ax = std::fabs(x);
    if (ax > 240) return false;
    int e = 0;
    (void)std::frexp(ax, &e);  // ax = f * 2^e, f in [0.5, 1)
    const int q = std::max(e - 1, -7) - 3;  // the spacing exponent: normals 2^(e-1-3), subnormals 2^-10
    return std::ldexp(std::round(std::ldexp(ax, -q)), q) == ax;
  };
  int finite = 0;
  for (int bits = 0; bits < 256; ++bits) {
    tj::f8e4m3 h;
    h.bits = static_cast<std::uint8_t>(bits);
    const float v = static_cast<float>(h);
    if (std::isnan(v)) continue;
    ++finite;
    CAPTURE(bits);
    CHECK(fnuz_exact(v / 2.0));
  }
  CHECK(finite == 254);
}

namespace {
struct LoadBlock {  // out[0:8, 0:64] = the [8, 64] block of `in` at (i, j)
  void operator()(tj::Desc<float, 8, 64> in, tj::Ptr<float> out, tj::Int i, tj::Int j) const {
    auto t = in.load(i, j);
    tj::store(out + tj::expand_dims<1>(tj::arange<8>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), t);
  }
};
}  // namespace

TEST_CASE("desc_load_fills_out_of_bounds_with_the_descriptors_oob_fill") {
  const auto dev = tj::Device::interpreter();
  std::vector<float> in(10 * 64);
  for (std::size_t x = 0; x < in.size(); ++x) in[x] = static_cast<float>(x);
  std::vector<float> out(8 * 64);
  auto k = tj::compile<LoadBlock>(dev, {.num_warps = 4});
  D zero(dev, in.data(), tj::DType::f32, {10, 64}, {64, 1}, {8, 64});
  D nan(dev, in.data(), tj::DType::f32, {10, 64}, {64, 1}, {8, 64}, {.oob_fill = D::OobFill::nan});
  k.launch(tj::Grid{1}, zero, out.data(), 6, -3);  // rows 6..13 (10.. out), columns -3..60
  CHECK(out[0 * 64 + 3] == in[6 * 64 + 0]);
  CHECK(out[0 * 64 + 2] == 0.0f);   // column -1
  CHECK(out[5 * 64 + 10] == 0.0f);  // row 11
  k.launch(tj::Grid{1}, nan, out.data(), 6, -3);
  CHECK(out[3 * 64 + 63] == in[9 * 64 + 60]);
  CHECK(std::isnan(out[0 * 64 + 2]));
  CHECK(std::isnan(out[4 * 64 + 10]));
  // The same kernel's sm_80 / HIP text reads the fill from the descriptor (byte 259).
  const auto g = tj::codegen::generate(tj::trace(LoadBlock{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  CHECK(g.source.find(".tail[3]") != std::string::npos);
}

TEST_CASE("sm90a_pipeline_with_one_stage_waits_for_its_wgmma_before_refilling") {
  // One stage: the next copy overwrites the stage this iteration's wgmma reads, so nothing may stay in flight.
  auto ir = tj::trace(examples::MatmulV5<128, 128, tj::bf16>{});
  const auto one = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 1}).source;
  CHECK(one.find("wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n  __syncthreads();  // every warp group") != std::string::npos);
  CHECK(one.find("wgmma.wait_group.sync.aligned 1;") == std::string::npos);
  const auto two = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 2}).source;
  CHECK(two.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos);
}

TEST_CASE("i8_wgmma_takes_only_its_legal_widths_and_a_warp_mismatch_is_reported") {
  // Integer wgmma: N = 8, 24 or a multiple of 16. N = 56 is legal for f16 but not for i8: such a dot takes mma.sync
  // (m16n8k32 s8, any multiple of 8), never a wgmma ptxas would reject.
  const auto n56 = tj::codegen::generate(tj::trace(examples::MatmulV5<64, 56, std::int8_t>{}), {}, tj::codegen::target_for("sm_90a"),
                                         {.num_warps = 4});
  CHECK(n56.source.find("tj_mma_s8(") != std::string::npos);
  CHECK(n56.source.find("wgmma.mma_async.sync") == std::string::npos);
  if (std::string why; tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) nvrtc_compiles(n56.source, "sm_90a");
  CHECK_NOTHROW(tj::codegen::generate(tj::trace(examples::MatmulV5<64, 48, std::int8_t>{}), {}, tj::codegen::target_for("sm_90a"),
                                      {.num_warps = 4}));
  // BLOCK_M = 128 with 4 warps is not a wgmma shape: the diagnostics say why the kernel gets mma.sync.
  const auto g = tj::codegen::generate(tj::trace(examples::MatmulV5<128, 128, tj::bf16>{}), {}, tj::codegen::target_for("sm_90a"),
                                       {.num_warps = 4});
  bool said = false;
  for (const auto& d : g.diagnostics)
    said |= d.find("is not a wgmma shape (M = 128 is not 16 x num_warps = 64): lowered to mma.sync") != std::string::npos;
  CHECK(said);  // only the rule it breaks
  CHECK(g.dynamic_shared_bytes == 0);
}

namespace {
using testing::act_ref;
template <examples::Act ACT, class Out>
void fused_case(const tj::Device& dev, int M, int N, int K, float alpha = 0.5f) {
  CAPTURE(static_cast<int>(ACT));
  CAPTURE(alpha);
  CAPTURE(testing::fresh_seed());
  ProblemTN<tj::bf16> p(M, N, K, 77);
  auto bias = testing::random_floats(static_cast<std::size_t>(N), -1, 1, 78);
  std::vector<Out> c(static_cast<std::size_t>(M) * N, Out(std::nanf("")));
  D a(dev, p.a.data(), tj::DType::bf16, {M, K}, {K, 1}, {64, 64});
  D b(dev, p.b.data(), tj::DType::bf16, {N, K}, {K, 1}, {96, 64});
  auto k = tj::compile<examples::MatmulV5Fused<64, 96, tj::bf16, ACT, Out>>(dev, {.num_warps = 4});
  k.launch(tj::Grid{tj::cdiv(M, 64) * tj::cdiv(N, 96)}, a, b, bias.data(), c.data(), alpha, M, N, K);
  std::vector<double> got(c.size()), ref(c.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const std::size_t x = static_cast<std::size_t>(i) * N + j;
      got[x] = static_cast<float>(c[x]);
      REQUIRE(!std::isnan(got[x]));
      ref[x] = act_ref(ACT, alpha * p.ref[x] + bias[static_cast<std::size_t>(j)]);
    }
  CHECK(testing::rel_error(got, ref) < (std::is_same_v<Out, float> ? 1e-5 : 1e-2));  // bf16 output: its rounding
}
}  // namespace

TEST_CASE("gemm_v5_fused_epilogue_bias_activation_cast") {
  const auto dev = tj::Device::interpreter();
  fused_case<examples::Act::relu, tj::bf16>(dev, 70, 100, 72);
  fused_case<examples::Act::silu, float>(dev, 64, 96, 128);
  fused_case<examples::Act::gelu_tanh, tj::bf16>(dev, 33, 200, 64);
  fused_case<examples::Act::none, float>(dev, 64, 96, 64);
  // Large pre-activations (|x| up to ~100, as a K = 4096 GEMM of unit-range operands gives): e^{2u} and e^{-x} overflow
  // to +inf for a good part of the outputs, and the activations must reach their limits (x or 0), not NaN.
  fused_case<examples::Act::gelu_tanh, float>(dev, 64, 96, 64, 16.0f);
  fused_case<examples::Act::silu, float>(dev, 64, 96, 64, 16.0f);
  fused_case<examples::Act::gelu_tanh, tj::bf16>(dev, 70, 100, 72, 16.0f);
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    // sm_90a keeps the TMA ring + wgmma main loop; the epilogue runs on the accumulator registers.
    const auto g = tj::codegen::generate(tj::trace(examples::MatmulV5Fused<128, 256, tj::bf16, examples::Act::gelu_tanh>{}), {},
                                         tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4});
    CHECK(g.tma_params == std::vector<int>{0, 1});
    nvrtc_compiles(g.source, "sm_90a");
  }
}

namespace {
template <examples::Act ACT>
struct Activate16 {  // y[0:16] = act(x[0:16])
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto i = tj::arange<16>();
    tj::store(y + i, examples::activate<ACT>(tj::load(x + i)));
  }
};
template <examples::Act ACT>
void activation_limits(const tj::Device& dev) {
  CAPTURE(static_cast<int>(ACT));
  std::vector<float> x = {-1e30f, -1e4f, -100.0f, -30.0f, -10.5f, -3.0f, -1.0f, -1e-3f,
                          0.0f,   1e-3f, 1.0f,    3.0f,   10.5f, 30.0f, 100.0f, 1e30f};
  std::vector<float> y(16, std::nanf(""));
  auto k = tj::compile<Activate16<ACT>>(dev, {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), y.data());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(x[i]);
    REQUIRE(!std::isnan(y[i]));
    const double ref = act_ref(ACT, x[i]);
    CHECK(std::abs(y[i] - ref) <= 1e-5 * std::abs(ref) + 1e-30);  // f32: 2^t with t = x·log2(e) rounded to f32
  }
}
}  // namespace

TEST_CASE("fused_epilogue_activations_reach_their_limits_without_nan") {
  const auto dev = tj::Device::interpreter();
  activation_limits<examples::Act::gelu_tanh>(dev);
  activation_limits<examples::Act::silu>(dev);
}

TEST_CASE("gemm_v5_fused_epilogue_sm90a_has_no_spills_no_division_and_loads_the_bias_before_the_loop") {
  // The fused 128x256 GELU kernel ran ~22 us per tile slower than the plain one on the H200 (466 vs 668 TFLOP/s at
  // 4096^3). In its SASS (read without a GPU; not profiled): GELU's 2 / (1 + e^{2u}) was an IEEE div.rn.f32 per
  // accumulator register (128 per thread), each with a CALL to the slow-path subroutine that its fast path takes for the
  // +inf divisor x > ~10 gives (about a third of the outputs of the bench's K = 4096 GEMM, so nearly every warp at
  // every register), and the 128 call sites made ptxas spill 344 bytes (255 registers). Now: no f32 division, the bias
  // in flight during the K loop, no spills.
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto check = [](auto kernel, int warps, const std::string& what) {
    CAPTURE(what);
    const auto g = tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"),
                                         {.num_warps = warps, .num_stages = 4});
    CHECK(g.tma_params == std::vector<int>{0, 1});
    const std::string log = nvrtc_compiles(g.source, "sm_90a", {"--ptxas-options=-v"});
    std::smatch m;
    REQUIRE(std::regex_search(log, m, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)")));
    CHECK(std::stoi(m[1]) == 0);
    CHECK(std::stoi(m[2]) == 0);
    CHECK(log.find("wgmma.mma_async instructions are serialized") == std::string::npos);
    tj::runtime::JitRequest req;
    req.source = g.source;
    req.name = "fused.cu";
    req.arch = "compute_90a";
    const auto res = tj::runtime::compile(req);
    REQUIRE(res.binary.format == "ptx");
    const std::string ptx(res.binary.bytes.begin(), res.binary.bytes.end());
    CHECK(ptx.find("div.rn.f32") == std::string::npos);
    CHECK(ptx.find("div.full.f32") == std::string::npos);
    const auto first_wgmma = ptx.find("wgmma.mma_async");
    const auto first_bias = ptx.find("ld.global");  // the bias is the only operand not read through TMA
    const auto last_bias = ptx.rfind("ld.global");
    REQUIRE(first_wgmma != std::string::npos);
    REQUIRE(first_bias != std::string::npos);
    CHECK(last_bias < first_wgmma);  // every bias load is issued before the main loop
  };
  using examples::Act, examples::MatmulV5Fused;
  check(MatmulV5Fused<128, 256, tj::bf16, Act::gelu_tanh>{}, 8, "128x256 GELU -> bf16");
  check(MatmulV5Fused<128, 256, tj::bf16, Act::silu>{}, 8, "128x256 SiLU -> bf16");
  check(MatmulV5Fused<128, 256, tj::bf16, Act::gelu_tanh, float>{}, 8, "128x256 GELU -> f32");
  check(MatmulV5Fused<128, 256, tj::f8e4m3, Act::gelu_tanh, tj::bf16>{}, 8, "128x256 f8 GELU -> bf16");
  check(MatmulV5Fused<64, 96, tj::bf16, Act::gelu_tanh>{}, 4, "64x96 GELU -> bf16");
  check(MatmulV5Fused<64, 192, tj::bf16, Act::gelu_tanh>{}, 4, "64x192 GELU -> bf16");
}

TEST_CASE("gemm_rejects_an_output_past_32_bit_offsets") {
  alignas(16) static tj::bf16 a[64], b[64];
  alignas(16) static float c[64];
  CHECK_THROWS_WITH_AS(examples::Gemm<tj::bf16>::check(a, b, c, 65536, 65536, 8), doctest::Contains("32-bit offsets"),
                       tj::InvalidArgument);
}

TEST_CASE("desc_arguments_are_checked_at_launch") {
  const auto dev = tj::Device::interpreter();
  std::vector<tj::bf16> a(64 * 64, tj::bf16(1.0f)), b(64 * 64, tj::bf16(1.0f));
  std::vector<float> c(64 * 64);
  auto k = tj::compile<examples::MatmulV5<64, 64, tj::bf16>>(dev, {.num_warps = 4});
  D good(dev, a.data(), tj::DType::bf16, {64, 64}, {64, 1}, {64, 64});
  // Another block shape is fine: the kernel's Desc block is what it loads.
  D other_block(dev, b.data(), tj::DType::bf16, {64, 64}, {64, 1}, {32, 64});
  k.launch(tj::Grid{1}, good, other_block, c.data(), 64, 64, 64);
  CHECK(c[64 * 64 - 1] == doctest::Approx(64.0));
  D rank1(dev, b.data(), tj::DType::bf16, {64 * 64}, {1}, {64});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, good, rank1, c.data(), 64, 64, 64), doctest::Contains("rank 1"), tj::InvalidArgument);
  D wrong_type(dev, b.data(), tj::DType::f16, {64, 64}, {64, 1}, {64, 64});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, good, wrong_type, c.data(), 64, 64, 64), doctest::Contains("f16 elements"),
                       tj::InvalidArgument);
  using Small = examples::MatmulV5<64, 64, tj::bf16>;
  CHECK_THROWS_WITH_AS(tj::compile<Small>(dev, {.num_warps = 4, .num_stages = 9}), doctest::Contains("num_stages = 9"),
                       tj::InvalidArgument);
  k.launch(tj::Grid{1}, good, good, c.data(), 64, 64, 64);
  CHECK(c[0] == doctest::Approx(64.0));
}

TEST_CASE("gemm_v5_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  run_v5<128, 256, tj::bf16>(dev, 512, 512, 1024, 4, 1e-5);
  run_v5<128, 256, tj::bf16>(dev, 300, 700, 200, 3, 1e-5);  // ragged M, N, K: TMA zero fill + masked store
  run_v5<128, 192, tj::f16>(dev, 256, 192 * 3, 512, 4, 1e-5);
  run_v5<64, 96, tj::bf16>(dev, 1000, 96 * 2, 8192, 6, 1e-5);
  // 128-wide K steps (two 128-byte slabs per block, two TMA boxes each): K a multiple of 128, and K ending mid step.
  run_v5<64, 96, tj::bf16, 128>(dev, 1000, 96 * 2, 8192, 5, 1e-5);
  run_v5<64, 192, tj::bf16, 128>(dev, 300, 200, 64 * 13, 3, 1e-5);
  run_v5<128, 128, tj::bf16>(dev, 1024, 1024, 64, 1, 1e-5);  // one stage, one K step
  run_v5<128, 128, tj::bf16>(dev, 256, 256, 64 * 7, 2, 1e-5);
  // f8: the products are exact, but Hopper's f8 wgmma accumulates with a reduced-precision adder (about 14
  // mantissa bits kept per k32 step; DeepSeek-V3 report, section 3.3.2): measured relative Frobenius error
  // 2.4e-4 to 4.7e-4 on the H200 against f64, so the bound is 2e-3 (f8e4m3's own spacing is 2^-3).
  run_v5<128, 256, tj::f8e4m3>(dev, 512, 512, 1024, 4, 2e-3);
  run_v5<128, 128, tj::f8e5m2>(dev, 300, 200, 8 * 100, 3, 2e-3);
  // tf32 keeps 10 mantissa bits of each f32 input (relative error ~2^-11 per product).
  run_v5<128, 128, float>(dev, 256, 384, 512, 4, 5e-3);
  run_v5<128, 256, std::int8_t>(dev, 300, 500, 128 * 5, 4, 0);  // exact
  // The same dtypes through mma.sync (compiled for sm_90, no wgmma): tf32 m16n8k8, i8 and f8 m16n8k32.
  run_v5<64, 64, float>(dev, 300, 200, 264, 3, 5e-3, false, "sm_90");
  run_v5<64, 96, std::int8_t>(dev, 257, 300, 32 * 9, 3, 0, false, "sm_90");
  run_v5<64, 64, tj::f8e4m3>(dev, 256, 320, 512, 3, 2e-3, false, "sm_90");
  run_v5<64, 64, tj::f8e5m2>(dev, 130, 70, 160, 2, 2e-3, false, "sm_90");
  // Scaled f8 (per-row / per-column, and per-tensor): the f8 accumulation bound above.
  run_v5_scaled<128, 256, tj::f8e4m3>(dev, 300, 700, 1024, false, 2e-3);
  run_v5_scaled<128, 128, tj::f8e5m2>(dev, 512, 256, 512, true, 2e-3);
}

TEST_CASE("gemm_v5_warp_specialised_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  run_v5<128, 256, tj::bf16>(dev, 512, 512, 1024, 4, 1e-5, true);
  run_v5<128, 256, tj::bf16>(dev, 300, 700, 200, 3, 1e-5, true);  // ragged: fewer K steps than stages
  run_v5<128, 192, tj::f16>(dev, 256, 192 * 3, 64 * 37, 4, 1e-5, true);
  run_v5<256, 128, tj::bf16>(dev, 512, 256, 64 * 9, 4, 1e-5, true);  // four consumer warp groups
  run_v5<128, 128, tj::bf16>(dev, 256, 256, 64 * 7, 1, 1e-5, true);  // one stage: released only after its wgmma
  run_v5<128, 128, tj::bf16>(dev, 1024, 1024, 64, 2, 1e-5, true);    // one K step
  run_v5<128, 256, tj::f8e4m3>(dev, 512, 512, 1024, 4, 2e-3, true);
  run_v5<64, 128, tj::bf16>(dev, 200, 256, 64 * 5, 3, 1e-5, true);  // one consumer warp group
  // A light kernel (ptxas needs ~58 registers): the launch allocation must still be the pool setmaxnreg.inc
  // redistributes (__maxnreg__), else the consumers wait forever.
  run_v5<128, 64, tj::bf16>(dev, 256, 320, 64 * 6, 3, 1e-5, true);
}

TEST_CASE("gemm_v5_warp_specialised_sm90a_code_releases_the_previous_stage") {
  auto ir = tj::trace(examples::MatmulV5<128, 256, tj::bf16>{});
  const auto g = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4, .warp_specialize = true});
  CHECK(g.threads == 384);
  // The wgmma of iteration i stays in flight: iteration i releases the stage of i - 1 (after wait_group 1).
  const auto rel = g.source.find("tj_mbar_arrive(tj_empty");
  REQUIRE(rel != std::string::npos);
  CHECK(g.source.rfind("wgmma.wait_group.sync.aligned 1;", rel) != std::string::npos);
  CHECK(g.source.find("(tj_it", rel) < g.source.find(";", rel));
  CHECK(g.source.find("- 1u) % 4u", rel) != std::string::npos);
  CHECK(testing::occurrences(g.source, "__syncthreads()") == 1);
  CHECK(g.source.find("setmaxnreg.inc.sync.aligned.u32 240;") != std::string::npos);  // 168 x 384 - 24 x 128 = 240 x 256
  // Four consumer warp groups: the launch gives 96 registers x 640 threads; after the producer's 24 the consumers
  // can take 112 each (an inc past the program's pool would block forever).
  const auto four = tj::codegen::generate(tj::trace(examples::MatmulV5<256, 128, tj::bf16>{}), {}, tj::codegen::target_for("sm_90a"),
                                          {.num_warps = 16, .num_stages = 4, .warp_specialize = true});
  CHECK(four.threads == 640);
  CHECK(four.source.find("setmaxnreg.inc.sync.aligned.u32 112;") != std::string::npos);
  // One consumer warp group: the launch already gives it 255 registers; no inc.
  const auto one_group = tj::codegen::generate(tj::trace(examples::MatmulV5<64, 128, tj::bf16>{}), {}, tj::codegen::target_for("sm_90a"),
                                               {.num_warps = 4, .num_stages = 4, .warp_specialize = true});
  CHECK(one_group.source.find("setmaxnreg.inc") == std::string::npos);
  CHECK(one_group.source.find("setmaxnreg.dec.sync.aligned.u32 24;") != std::string::npos);
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) nvrtc_compiles(g.source, "sm_90a");
  // One stage: the release waits for every wgmma (nothing left in flight).
  const auto one = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 1, .warp_specialize = true});
  const auto rel1 = one.source.find("tj_mbar_arrive(tj_empty");
  REQUIRE(rel1 != std::string::npos);
  CHECK(one.source.rfind("wgmma.wait_group.sync.aligned 0;", rel1) != std::string::npos);
  CHECK(one.source.find("8u * tj_st", rel1) < one.source.find("\n", rel1));
}

TEST_CASE("gemm_v5_gpu_small_for_the_sanitizers") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  run_v5<128, 128, tj::bf16>(dev, 200, 130, 64 * 5, 3, 1e-5);
  run_v5<64, 96, tj::f8e4m3>(dev, 64, 96, 128 * 3, 2, 2e-3);  // f8 accumulation: see gemm_v5_gpu_matches_f64
  run_v5<128, 128, tj::bf16>(dev, 200, 130, 64 * 5, 3, 1e-5, true);  // warp-specialised
  run_v5<128, 128, tj::bf16>(dev, 200, 130, 200, 3, 1e-5, false, "sm_90");  // the cp.async ring, ragged K
}

TEST_CASE("gemm_small_m_split_k_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  for (auto [M, N, K] : {std::tuple{1, 4096, 4096}, std::tuple{16, 1000, 14336}, std::tuple{128, 768, 2048}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    const auto sk = examples::Gemm<tj::bf16>::small_m_for(M, N, K, dev.num_sms());  // the swap-AB kernel, split
    CAPTURE(sk.splits);
    CHECK(sk.splits > 1);
    ProblemTN<tj::bf16> p(M, N, K, static_cast<unsigned>(M + N));
    auto* da = static_cast<tj::bf16*>(dev.alloc(p.a.size() * 2));
    auto* db = static_cast<tj::bf16*>(dev.alloc(p.b.size() * 2));
    auto* dc = static_cast<float*>(dev.alloc(static_cast<std::size_t>(M) * N * 4));
    dev.copy_to_device(da, p.a.data(), p.a.size() * 2);
    dev.copy_to_device(db, p.b.data(), p.b.size() * 2);
    dev.memset(dc, 0xff, static_cast<std::size_t>(M) * N * 4);
    tj::TuneOptions o;
    o.cache_dir = std::filesystem::path{};
    examples::Gemm<tj::bf16> gemm(dev, o);
    gemm(da, db, dc, M, N, K);
    std::vector<float> c(static_cast<std::size_t>(M) * N);
    dev.copy_to_host(c.data(), dc, c.size() * 4);
    for (float v : c) REQUIRE(!std::isnan(v));
    CHECK(testing::rel_error(c, p.ref) < 1e-5);
    dev.free(da), dev.free(db), dev.free(dc);
  }
  // A descriptor with another block and no swizzle is re-encoded for the kernel's TMA copies.
  ProblemTN<tj::bf16> p(128, 128, 64, 5);
  auto* da = static_cast<tj::bf16*>(dev.alloc(128 * 64 * 2));
  auto* db = static_cast<tj::bf16*>(dev.alloc(128 * 64 * 2));
  auto* dc = static_cast<float*>(dev.alloc(128 * 128 * 4));
  dev.copy_to_device(da, p.a.data(), 128 * 64 * 2);
  dev.copy_to_device(db, p.b.data(), 128 * 64 * 2);
  D a(dev, da, tj::DType::bf16, {128, 64}, {64, 1}, {32, 32});
  D b(dev, db, tj::DType::bf16, {128, 64}, {64, 1}, {8, 64});
  auto k = tj::compile<examples::MatmulV5<128, 128, tj::bf16>>(dev, {.num_warps = 8});
  k.launch(tj::Grid{1}, a, b, dc, 128, 128, 64);
  std::vector<float> c(128 * 128);
  dev.copy_to_host(c.data(), dc, c.size() * 4);
  CHECK(testing::rel_error(c, p.ref) < 1e-5);
  dev.free(da), dev.free(db), dev.free(dc);
}

TEST_CASE("gemm_tuned_checks_its_arguments") {
  using G = examples::Gemm<tj::bf16>;
  alignas(16) static tj::bf16 a[64 * 64], b[64 * 64];
  alignas(16) static float c[64 * 64];
  CHECK_THROWS_WITH_AS(G::check(a, b, c, 0, 64, 64), doctest::Contains("M = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(G::check(a, b, c, 64, 64, 60), doctest::Contains("multiple of 16 bytes"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(G::check(a + 1, b, c, 64, 64, 64), doctest::Contains("16-byte aligned"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(G::check(a, nullptr, c, 64, 64, 64), doctest::Contains("B = "), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(G::check(a, b, reinterpret_cast<float*>(a) + 16, 8, 8, 64), doctest::Contains("overlaps A"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(G::check(a, b, reinterpret_cast<float*>(b), 8, 8, 64), doctest::Contains("overlaps B"), tj::InvalidArgument);
  G::check(a, b, c, 64, 64, 64);
  CHECK(G::candidates().size() == 16);
}

TEST_CASE("gemm_tuned_interpreter_tunes_16_configs_and_matches_f64") {
  const auto dev = tj::Device::interpreter();
  ProblemTN<tj::bf16> p(70, 200, 72, 11);
  std::vector<float> c(70 * 200, std::nanf(""));
  tj::TuneOptions o;
  o.cache_dir = std::filesystem::path{};  // no persistence
  o.warmup = 0;
  o.reps = 1;
  o.log = [](const std::string&) {};
  examples::Gemm<tj::bf16> gemm(dev, o);
  gemm(p.a.data(), p.b.data(), c.data(), 70, 200, 72);
  for (float v : c) REQUIRE(!std::isnan(v));
  CHECK(testing::rel_error(c, p.ref) < 1e-6);
  const auto& r = gemm.report(70, 200, 72);
  CHECK(r.candidates.size() == 16);
  int timed = 0;
  for (const auto& cr : r.candidates) timed += cr.status == tj::CandidateReport::Status::timed;
  CHECK(timed == 16);
  // A small-M shape runs a fixed kernel: no tuning report, and it says so (test_gemm_small_m.cpp has the paths).
  REQUIRE(examples::Gemm<tj::bf16>::path_for(1, 128, 4096, dev.num_sms()) == examples::Gemm<tj::bf16>::Path::small_m);
  CHECK_THROWS_WITH_AS(gemm.report(1, 128, 4096), doctest::Contains("a fixed kernel"), tj::InvalidArgument);
}

TEST_CASE("gemm_tuned_gpu_16_configs_then_reuse_by_a_second_process") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  const long long M = 4096, N = 4096, K = 4096;
  ProblemTN<tj::bf16> p(256, 256, 64, 3);  // values only; the reference is checked on a corner below
  std::vector<tj::bf16> ha(static_cast<std::size_t>(M * K)), hb(static_cast<std::size_t>(N * K));
  for (std::size_t i = 0; i < ha.size(); ++i) ha[i] = p.a[i % p.a.size()];
  for (std::size_t i = 0; i < hb.size(); ++i) hb[i] = p.b[i % p.b.size()];
  auto* da = static_cast<tj::bf16*>(dev.alloc(ha.size() * 2));
  auto* db = static_cast<tj::bf16*>(dev.alloc(hb.size() * 2));
  auto* dc = static_cast<float*>(dev.alloc(static_cast<std::size_t>(M * N) * 4));
  dev.copy_to_device(da, ha.data(), ha.size() * 2);
  dev.copy_to_device(db, hb.data(), hb.size() * 2);
  dev.memset(dc, 0xff, static_cast<std::size_t>(M * N) * 4);
  dev.synchronize();
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("tj-gemm-tune-{}", testing::fresh_seed());
  std::filesystem::create_directories(dir);
  tj::TuneOptions o;
  o.device = dev;
  o.cache_dir = dir;
  auto t0 = std::chrono::steady_clock::now();
  examples::Gemm<tj::bf16> gemm(dev, o);
  gemm(da, db, dc, M, N, K);
  dev.synchronize();
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto& r = gemm.report(M, N, K);
  MESSAGE(r.str());
  MESSAGE("16 GEMM configs tuned in ", first_ms, " ms wall (target < 3000 ms); best ", r.best_config().str(), " ",
          r.candidates[r.best].median_ms, " ms = ", 2.0 * M * N * K / (r.candidates[r.best].median_ms * 1e-3) / 1e12, " TFLOP/s");
  CHECK(r.tuned);
  // The winner's output: all written, and exact against f64 on a corner block (products of the periodic inputs).
  std::vector<float> c(static_cast<std::size_t>(M * N));
  dev.copy_to_host(c.data(), dc, c.size() * 4);
  for (float v : c) REQUIRE(!std::isnan(v));
  double err = 0, ref2 = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      double s = 0;
      for (long long k = 0; k < K; ++k)
        s += double(float(ha[static_cast<std::size_t>(i * K + k)])) * float(hb[static_cast<std::size_t>(j * K + k)]);
      const double d = c[static_cast<std::size_t>(i * N + j)] - s;
      err += d * d, ref2 += s * s;
    }
  CHECK(std::sqrt(err / ref2) < 1e-5);
  // A second process reads the stored winner.
  const auto self = std::filesystem::canonical("/proc/self/exe");
  const std::string cmd = "TILEJIT_GEMM_CHILD_DIR='" + dir.string() + "' '" + self.string() +
                          "' -tc='gemm_tuned_reuse*' > '" + (dir / "child.log").string() + "' 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
  double child_ms = -1;
  std::ifstream(dir / "child_ms.txt") >> child_ms;
  MESSAGE("stored GEMM winner reused by a second process in ", child_ms, " ms (target < 10 ms)");
  CHECK(child_ms >= 0);
  CHECK(child_ms < 10);
  dev.free(da), dev.free(db), dev.free(dc);
  std::filesystem::remove_all(dir);
}

TEST_CASE("gemm_tuned_reuse_in_a_child_process") {
  const char* dir = std::getenv("TILEJIT_GEMM_CHILD_DIR");
  if (!dir) {
    MESSAGE("run by the GPU GEMM tuning test in a child process; nothing to do here");
    return;
  }
  auto dev = tj::Device::best();
  REQUIRE(dev.backend() == tj::Backend::cuda);
  auto* da = static_cast<tj::bf16*>(dev.alloc(4096 * 4096 * 2));
  auto* db = static_cast<tj::bf16*>(dev.alloc(4096 * 4096 * 2));
  auto* dc = static_cast<float*>(dev.alloc(4096 * 4096 * 4));
  tj::TuneOptions o;
  o.device = dev;
  o.cache_dir = std::filesystem::path(dir);
  examples::Gemm<tj::bf16> gemm(dev, o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto& r = gemm.tuner().tune(examples::Gemm<tj::bf16>::key(4096, 4096, 4096), examples::Gemm<tj::bf16>::grid(4096, 4096, dev.num_sms()),
                                    D(dev, da, tj::DType::bf16, {4096, 4096}, {4096, 1}, {64, 64}, {.swizzle = D::Swizzle::b128}),
                                    D(dev, db, tj::DType::bf16, {4096, 4096}, {4096, 1}, {64, 64}, {.swizzle = D::Swizzle::b128}), dc,
                                    4096, 4096, 4096);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK_FALSE(r.tuned);
  CHECK(r.from_disk);
  std::ofstream(std::filesystem::path(dir) / "child_ms.txt") << ms << '\n';
  dev.free(da), dev.free(db), dev.free(dc);
}
