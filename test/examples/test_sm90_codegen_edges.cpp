// Edge cases of the sm_90a code generator's Hopper path (resident TMA blocks,
// 128-byte slabs, register-A wgmma, MN-major B, register-only layout
// conversions), checked without a GPU: each kernel either generates code that
// NVRTC compiles for sm_90a (ptxas included: a cubin) and runs correctly in
// the interpreter against a CPU reference, or is refused with a typed error.
// Tests that need NVRTC skip with a MESSAGE when it is unavailable. One case runs the narrow slabs (64B / 32B
// swizzle) on an sm_90 GPU and skips without one.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/mirror.hpp"
#include "test/common/text.hpp"
#include "examples/attention/flash_fwd_tma.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;
using TD = tj::TensorDescriptor;

namespace {

// ---- kernels ---------------------------------------------------------------------

/// C[M, N] = A[M, K] · B: A by pointer loads (registers), B through a descriptor —
/// stored [N, K] and used as trans(block) (K-major B) when B_NK, else stored [K, N]
/// and used as the block itself (MN-major B). A is loaded as TA and cast to T
/// (TA = float: the register-A operand is packed from f32 values).
template <int BM, int BN, int BK, bool B_NK, class T, class TA = T>
struct RegAGemm {
  using BDesc = std::conditional_t<B_NK, tj::Desc<T, BN, BK>, tj::Desc<T, BK, BN>>;
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Ptr<TA> a, BDesc b, tj::Ptr<Out> c, tj::Size M, tj::Size N, tj::Size K) const {
    auto m0 = tj::program_id(0) * BM;
    auto n0 = tj::program_id(1) * BN;
    auto rm = m0 + tj::arange<BM>();
    auto rn = n0 + tj::arange<BN>();
    auto acc = tj::zeros<Out, BM, BN>();
    acc = tj::for_range(0, K, BK, acc, [&](tj::Int k0, auto acc) {
      auto rk = k0 + tj::arange<BK>();
      auto at = tj::load(a + tj::expand_dims<1>(rm) * K + tj::expand_dims<0>(rk), tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rk < K));
      auto a16 = tj::cast<T>(at);
      if constexpr (B_NK)
        return tj::dot(a16, tj::trans(b.load(n0, k0)), acc);
      else
        return tj::dot(a16, b.load(k0, n0), acc);
    });
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// C = A·Bᵀ with both operands descriptor blocks in the loop (K-major), any BK
/// (BK·size a multiple of 32 bytes: 32 bf16 = a half-used 128-byte slab).
template <int BM, int BN, int BK, class T>
struct DescGemm {
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, BM, BK> a, tj::Desc<T, BN, BK> b, tj::Ptr<Out> c, tj::Size M, tj::Size N, tj::Size K) const {
    auto m0 = tj::program_id(0) * BM;
    auto n0 = tj::program_id(1) * BN;
    auto acc = tj::for_range(0, K, BK, tj::zeros<Out, BM, BN>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc); });
    auto rm = m0 + tj::arange<BM>();
    auto rn = n0 + tj::arange<BN>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// acc += A·B1ᵀ + A·B2 [BM, BN] per K step: A and B1 descriptor blocks (B1 [N, K], K-major), B2 an MN-major
/// descriptor block [K, N] or (REG_B2) pointer-loaded registers. Two dots of one extent: with BM = 64 and 8 warps
/// neither may split N unless both can (v0.26: B2 at N = 64 splits inside a slab, and a register B never splits).
template <int BM, int BN, int BK, bool REG_B2>
struct TwoDotsGemm {
  void operator()(tj::Desc<tj::bf16, BM, BK> a, tj::Desc<tj::bf16, BN, BK> b1, tj::Desc<tj::bf16, BK, BN> b2, tj::Ptr<tj::bf16> b2p,
                  tj::Ptr<float> c, tj::Size M, tj::Size N, tj::Size K) const {
    auto m0 = tj::program_id(0) * BM;
    auto n0 = tj::program_id(1) * BN;
    auto rn = n0 + tj::arange<BN>();
    auto acc = tj::for_range(0, K, BK, tj::zeros<float, BM, BN>(), [&](tj::Int k0, auto acc) {
      auto at = a.load(m0, k0);
      auto first = tj::dot(at, tj::trans(b1.load(n0, k0)), acc);
      if constexpr (REG_B2) {
        auto rk = k0 + tj::arange<BK>();
        return tj::dot(at, tj::load(b2p + tj::expand_dims<1>(rk) * N + tj::expand_dims<0>(rn), tj::expand_dims<1>(rk < K) & tj::expand_dims<0>(rn < N)),
                       first);
      } else {
        return tj::dot(at, b2.load(k0, n0), first);
      }
    });
    auto rm = m0 + tj::arange<BM>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// A resident Q block [BM, D] read by a dot inside a nested loop (K blocks in the
/// inner loop's pipeline) and by a second dot outside every loop, against a block
/// of the same descriptor loaded outside the loops too (resident, same box):
///   c  = Q · Σ_{j < J, i < NB} K[(j·NB + i)·BN ..]ᵀ      [BM, BN]
///   c2 = Q · K[0 .. BN)ᵀ
template <int BM, int BN, int D, class T>
struct ResidentNested {
  void operator()(tj::Desc<T, BM, D> q, tj::Desc<T, BN, D> k, tj::Ptr<float> c, tj::Ptr<float> c2, tj::Size NB, tj::Size J) const {
    auto qt = q.load(tj::program_id(0) * BM, 0);
    auto acc = tj::for_range(0, J, 1, tj::zeros<float, BM, BN>(), [&](tj::Int j, auto acc) {
      return tj::for_range(0, NB, 1, acc, [&](tj::Int i, auto acc2) { return tj::dot(qt, tj::trans(k.load((j * NB + i) * BN, 0)), acc2); });
    });
    auto first = tj::dot(qt, tj::trans(k.load(0, 0)));
    auto rm = tj::program_id(0) * BM + tj::arange<BM>();
    auto rn = tj::arange<BN>();
    auto offs = tj::expand_dims<1>(rm) * BN + tj::expand_dims<0>(rn);
    tj::store(c + offs, acc);
    tj::store(c2 + offs, first);
  }
};

/// One K block used both through trans (S = Q·Kᵀ, K-major B) and directly
/// (dQ += cast(S·scale)·K, register-A with MN-major B) in one loop, as an
/// attention backward does.
template <int BM, int BN, int D, class T>
struct TransAndDirect {
  void operator()(tj::Desc<T, BM, D> q, tj::Desc<T, BN, D> k, tj::Ptr<float> out, tj::Size N) const {
    auto qt = q.load(tj::program_id(0) * BM, 0);
    auto acc = tj::for_range(0, N, BN, tj::zeros<float, BM, D>(), [&](tj::Int n0, auto acc) {
      auto kb = k.load(n0, 0);
      auto s = tj::dot(qt, tj::trans(kb));
      return tj::dot(tj::cast<T>(s * 0.125f), kb, acc);
    });
    auto rm = tj::program_id(0) * BM + tj::arange<BM>();
    tj::store(out + tj::expand_dims<1>(rm) * D + tj::expand_dims<0>(tj::arange<D>()), acc);
  }
};

// ---- helpers -----------------------------------------------------------------------

template <class K>
tj::codegen::Generated sm90(int warps, int stages, const K& kernel = K{}) {
  return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for("sm_90a"), {.num_warps = warps, .num_stages = stages});
}

bool have_nvrtc() {
  std::string why;
  const bool ok = tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why);
  if (!ok) MESSAGE(("skipping the NVRTC part: " + why));
  return ok;
}

/// NVRTC builds `g` for sm_90a into a cubin (ptxas runs): no CompileError.
void nvrtc_ok(const tj::codegen::Generated& g) {
  tj::runtime::JitRequest req;
  req.source = g.source;
  req.name = g.kernel_name + ".cu";
  req.arch = "sm_90a";
  try {
    const auto res = tj::runtime::compile(req);
    CHECK(!res.binary.bytes.empty());
  } catch (const tj::Error& e) {
    FAIL_CHECK("NVRTC/ptxas rejected the generated sm_90a code: ", std::string(e.what()).substr(0, 3000));
  }
}

using testing::occurrences;

constexpr auto has_diag = &testing::has_diagnostic;

template <class T>
std::vector<T> rnd(std::size_t n, unsigned salt, float lo = -1, float hi = 1) {
  std::vector<T> out;
  for (float x : testing::random_floats(n, lo, hi, salt)) {
    if constexpr (std::is_same_v<T, std::int8_t>) out.push_back(static_cast<std::int8_t>(std::lround(x * 100)));
    else out.push_back(T(x));
  }
  return out;
}
template <class T>
double f(const T& x) {
  return static_cast<double>(static_cast<float>(x));
}

/// C[M, N] = A[M, K] · B in f64, B stored [N, K] (b_nk: used through trans) or [K, N].
template <class T>
std::vector<double> matmul_ref(const std::vector<T>& a, const std::vector<T>& b, int M, int N, int K, bool b_nk) {
  std::vector<double> ref(static_cast<std::size_t>(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int kk = 0; kk < K; ++kk)
        ref[static_cast<std::size_t>(i) * N + j] += f(a[static_cast<std::size_t>(i) * K + kk]) *
                                                   f(b[b_nk ? static_cast<std::size_t>(j) * K + kk : static_cast<std::size_t>(kk) * N + j]);
  return ref;
}

/// TransAndDirect's result in f64: out[M, D] = Σ_n bf16(0.125 · q_i·k_n) · k_n over keys n < N (the kernel rounds S
/// to bf16 before the second product, so the reference does too).
std::vector<double> trans_and_direct_ref(const std::vector<tj::bf16>& q, const std::vector<tj::bf16>& k, int M, int N, int D) {
  std::vector<double> ref(static_cast<std::size_t>(M) * D, 0.0);
  for (int i = 0; i < M; ++i)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int d = 0; d < D; ++d) s += f(q[static_cast<std::size_t>(i) * D + d]) * f(k[static_cast<std::size_t>(n) * D + d]);
      const double p = f(tj::bf16(static_cast<float>(s * 0.125)));
      for (int d = 0; d < D; ++d) ref[static_cast<std::size_t>(i) * D + d] += p * f(k[static_cast<std::size_t>(n) * D + d]);
    }
  return ref;
}

/// RegAGemm in the interpreter against f64 (over the inputs rounded to T).
template <int BM, int BN, int BK, bool B_NK, class T, class TA = T>
void run_rega(int M, int N, int K) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  auto dev = tj::Device::interpreter();
  auto a = rnd<TA>(static_cast<std::size_t>(M) * K, 1);
  auto b = rnd<T>(static_cast<std::size_t>(N) * K, 2);  // [N, K] when B_NK, else [K, N]
  std::vector<double> ref(static_cast<std::size_t>(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int kk = 0; kk < K; ++kk) {
        const double av = f(T(static_cast<float>(a[static_cast<std::size_t>(i) * K + kk])));
        const double bv = B_NK ? f(b[static_cast<std::size_t>(j) * K + kk]) : f(b[static_cast<std::size_t>(kk) * N + j]);
        s += av * bv;
      }
      ref[static_cast<std::size_t>(i) * N + j] = s;
    }
  using Out = tj::lang::dot_acc_t<T>;
  std::vector<Out> c(static_cast<std::size_t>(M) * N);
  std::memset(c.data(), 0xff, c.size() * sizeof(Out));
  const tj::DType dt = tj::dtype_v<T>;
  TD bd = B_NK ? TD(dev, b.data(), dt, {N, K}, {K, 1}, {BN, BK}) : TD(dev, b.data(), dt, {K, N}, {N, 1}, {BK, BN});
  auto kern = tj::compile<RegAGemm<BM, BN, BK, B_NK, T, TA>>(dev, {.num_warps = BM / 16, .num_stages = 2});
  kern.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, a.data(), bd, c.data(), M, N, K);
  std::vector<double> got(c.begin(), c.end());
  for (double x : got) REQUIRE(std::isfinite(x));
  CHECK(testing::rel_error(got, ref) < 1e-5);
}

}  // namespace

// ---- (3) register-A wgmma: A from pointer loads, B from a descriptor ---------------

TEST_CASE("sm90_edge_pointer_a_desc_b_takes_register_a_and_compiles") {
  const bool nv = have_nvrtc();
  SUBCASE("K-major B (trans of an [N, K] block), bf16") {
    const auto g = sm90<RegAGemm<64, 64, 64, true, tj::bf16>>(4, 3);
    CHECK(g.tma_params == std::vector<int>{1});
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, 64}});
    CHECK(occurrences(g.source, "\"r\"(tj_pa") == 4u * 4u);          // 4 k16 steps, 4 A registers each
    CHECK(occurrences(g.source, "tj_wgmma_desc_mn(") == 1u);           // only the prelude's definition: B K-major
    if (nv) nvrtc_ok(g);
  }
  SUBCASE("MN-major B ([K, N] block used directly), f16, 8 warps") {
    const auto g = sm90<RegAGemm<128, 96, 64, false, tj::f16>>(8, 2);
    CHECK(g.tma_params == std::vector<int>{1});
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, 32}});  // 192-byte rows: three 64-byte slabs
    CHECK(occurrences(g.source, "tj_wgmma_desc_mn_sw((tj_ring") == 1u);  // B's descriptor, once
    CHECK(occurrences(g.source, "tj_wgmma_desc_at(tj_db") == 3u);        // k16 steps 1..3: its start + 64 rows each
    CHECK(occurrences(g.source, "m64n96k16.f32.f16.f16") == 4u);
    if (nv) nvrtc_ok(g);
  }
  SUBCASE("A cast from f32: packed by cvt.rn.bf16x2 straight from the f32 registers") {
    const auto g = sm90<RegAGemm<64, 128, 64, false, tj::bf16, float>>(4, 2);
    // The cast lives in the pointer loads' blocked layout, so it is converted (through shared memory) to the
    // register-A layout as bf16-rounded values and packed by truncation (exact); the cvt.rn.x2 packing is for
    // a cast already in the operand layout (attention's P).
    CHECK(occurrences(g.source, "\"r\"(tj_pa") == 16u);
    CHECK(occurrences(g.source, "through shared memory") >= 1u);
    if (nv) nvrtc_ok(g);
  }
}

TEST_CASE("sm90_edge_pointer_a_desc_b_interpreter_matches_f64") {
  run_rega<64, 64, 64, true, tj::bf16>(70, 100, 136);   // ragged M, N, K
  run_rega<64, 96, 64, false, tj::f16>(64, 96 * 2 - 8, 64 * 2 + 8);  // (row stride: a multiple of 16 bytes)
  run_rega<64, 32, 32, false, tj::bf16, float>(65, 40, 40);
}

// ---- f8 / tf32 / i8 with a register A must not take the register-A form ---------------

TEST_CASE("sm90_edge_register_a_non16bit_types_do_not_take_rs") {
  // wgmma's register-A form takes 16-bit A only: these products lower to mma.sync (tf32 m16n8k8, 8-bit m16n8k32),
  // with B's block read by masked loads, and compile.
  const bool nv = have_nvrtc();
  auto check = [&](auto kernel, const char* what, const char* mma) {
    CAPTURE(what);
    const auto g = sm90<decltype(kernel)>(4, 2);
    CHECK(g.source.find("wgmma.mma_async.sync") == std::string::npos);  // no wgmma, register-A or not
    CHECK(g.source.find(mma) != std::string::npos);
    if (nv) nvrtc_ok(g);
  };
  check(RegAGemm<64, 64, 128, true, tj::f8e4m3>{}, "f8e4m3", "tj_mma_e4m3(");
  check(RegAGemm<64, 64, 32, true, float>{}, "tf32", "tj_mma_tf32(");
  check(RegAGemm<64, 64, 128, true, std::int8_t>{}, "i8", "tj_mma_s8(");
}


// ---- resident blocks ------------------------------------------------------------------------

TEST_CASE("sm90_edge_resident_block_read_by_two_dots_and_in_a_nested_loop") {
  const auto g = sm90<ResidentNested<64, 64, 64, tj::bf16>>(4, 3);
  CHECK(g.tma_params == std::vector<int>{0, 1});
  CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, 64}, {64, 64}});
  CHECK(occurrences(g.source, "copied once by TMA") == 2u);       // Q, and the K block outside the loops
  // Q waited for once before the outer loop (its nested dot reads it; the dot after the loops needs no second
  // wait), K(0) by its dot, both by thread 0 before exit.
  CHECK(occurrences(g.source, "tj_mbar_wait(tj_rbar") == 4u);
  CHECK(has_diag(g, "TMA pipeline of 3 stage(s)"));         // the inner loop's K blocks
  if (have_nvrtc()) nvrtc_ok(g);
  // Interpreter against f64.
  const int BM = 64, BN = 64, D = 64, NB = 3, J = 2, M = 100;
  auto dev = tj::Device::interpreter();
  auto q = rnd<tj::bf16>(static_cast<std::size_t>(M) * D, 3);
  auto k = rnd<tj::bf16>(static_cast<std::size_t>(NB * J * BN) * D, 4);
  const int Mp = tj::cdiv(M, BM) * BM;
  std::vector<float> c(static_cast<std::size_t>(Mp) * BN), c2(c.size());
  TD qd(dev, q.data(), tj::DType::bf16, {M, D}, {D, 1}, {BM, D}), kd(dev, k.data(), tj::DType::bf16, {NB * J * BN, D}, {D, 1}, {BN, D});
  auto kern = tj::compile<ResidentNested<64, 64, 64, tj::bf16>>(dev, {.num_warps = 4, .num_stages = 3});
  kern.launch(tj::Grid{tj::cdiv(M, BM)}, qd, kd, c.data(), c2.data(), NB, J);
  std::vector<double> ref(c.size(), 0.0), ref2(c.size(), 0.0);
  for (int i = 0; i < Mp; ++i)
    for (int n = 0; n < BN; ++n)
      for (int d = 0; d < D; ++d) {
        const double qv = i < M ? f(q[static_cast<std::size_t>(i) * D + d]) : 0.0;
        double ks = 0;
        for (int b = 0; b < NB * J; ++b) ks += f(k[static_cast<std::size_t>(b * BN + n) * D + d]);
        ref[static_cast<std::size_t>(i) * BN + n] += qv * ks;
        ref2[static_cast<std::size_t>(i) * BN + n] += qv * f(k[static_cast<std::size_t>(n) * D + d]);
      }
  CHECK(testing::rel_error(c, ref) < 1e-5);
  CHECK(testing::rel_error(c2, ref2) < 1e-5);
}

TEST_CASE("sm90_edge_one_descriptor_two_block_rows_is_a_typed_error") {
  // Desc<T, B0, B1> fixes the block in the parameter's type, so the DSL cannot load one descriptor in blocks of
  // two row counts; an IR that does (here: the loop's load re-pointed at the resident block's descriptor) must be
  // refused by name — one TMA box per descriptor — not given a box that fits one of the two.
  struct Two {
    void operator()(tj::Desc<tj::bf16, 64, 64> a, tj::Desc<tj::bf16, 128, 64> b, tj::Ptr<float> c, tj::Size K) const {
      auto at = a.load(tj::program_id(0) * 64, 0);
      auto acc = tj::for_range(0, K, 64, tj::zeros<float, 64, 128>(), [&](tj::Int k0, auto acc) { return tj::dot(at, tj::trans(b.load(k0, 0)), acc); });
      tj::store(c + tj::expand_dims<1>(tj::arange<64>()) * 128 + tj::expand_dims<0>(tj::arange<128>()), acc);
    }
  };
  auto ir = tj::trace(Two{});
  int pa = -1, loads = 0;
  for (std::size_t i = 0; i < ir.nodes.size(); ++i) {
    auto& n = ir.nodes[i];
    if (n.op == tj::ir::Op::param && n.type.is_desc && pa < 0) pa = static_cast<int>(i);
    if (n.op == tj::ir::Op::desc_load && ++loads == 2) n.args[0] = pa;  // the loop's [128, 64] load, now of `a`
  }
  REQUIRE(loads == 2);
  CHECK_THROWS_WITH_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 4, .num_stages = 2}),
                       doctest::Contains("one box per descriptor"), tj::Unsupported);
}

// ---- one K block read K-major (trans) and MN-major (directly) in one loop -----------------------

TEST_CASE("sm90_edge_block_used_through_trans_and_directly") {
  const auto g = sm90<TransAndDirect<64, 64, 64, tj::bf16>>(4, 2);
  CHECK(g.tma_params == std::vector<int>{0, 1});
  CHECK(occurrences(g.source, "tj_wgmma_desc_mn((tj_ring") == 1u);  // dS·K: MN-major, one descriptor for 4 k16 steps
  CHECK(occurrences(g.source, "\"r\"(tj_pa") == 16u);               // dS from registers
  CHECK(occurrences(g.source, "tj_pack_bf16x2(v") == 16u);          // packed from the f32 S values
  CHECK(g.source.find("through shared memory") == std::string::npos);
  if (have_nvrtc()) nvrtc_ok(g);
  const int BM = 64, BN = 64, D = 64, M = 64, N = 160;  // ragged N: the last block is zero-filled
  auto dev = tj::Device::interpreter();
  auto q = rnd<tj::bf16>(static_cast<std::size_t>(M) * D, 5);
  auto k = rnd<tj::bf16>(static_cast<std::size_t>(N) * D, 6);
  std::vector<float> out(static_cast<std::size_t>(M) * D);
  TD qd(dev, q.data(), tj::DType::bf16, {M, D}, {D, 1}, {BM, D}), kd(dev, k.data(), tj::DType::bf16, {N, D}, {D, 1}, {BN, D});
  tj::compile<TransAndDirect<64, 64, 64, tj::bf16>>(dev, {.num_warps = 4, .num_stages = 2}).launch(tj::Grid{1}, qd, kd, out.data(), N);
  const auto ref = trans_and_direct_ref(q, k, M, N, D);
  CHECK(testing::rel_error(out, ref) < 1e-2);
}

TEST_CASE("sm90_edge_block_used_through_trans_and_directly_partial_slabs") {
  const bool nv = have_nvrtc();
  // D = 96: S = Q·Kᵀ over 96 (three 64-byte slabs, 6 k steps) and dS·K with an MN-major B of N = 96 (LBO = 64 rows x 64).
  const auto g1 = sm90<TransAndDirect<64, 64, 96, tj::bf16>>(4, 2);
  CHECK(occurrences(g1.source, "m64n64k16.f32.bf16.bf16") == 6u);
  CHECK(occurrences(g1.source, "m64n96k16.f32.bf16.bf16") == 4u);
  CHECK(occurrences(g1.source, "tj_wgmma_desc_mn_sw((tj_ring") == 1u);
  CHECK(occurrences(g1.source, ", 4096u, 64)") == 1u);  // LBO: the slab stride of a 64-row block of 64-byte slabs
  CHECK(g1.tma_boxes == std::vector<std::array<int, 2>>{{64, 32}, {64, 32}});
  // Two warp groups, D = 128, N of the MN-major B not a multiple of 64 (72: 8 columns of the second slab).
  const auto g2 = sm90<TransAndDirect<128, 64, 128, tj::f16>>(8, 3);
  const auto g3 = sm90<RegAGemm<64, 72, 64, false, tj::bf16>>(4, 2);
  CHECK(occurrences(g3.source, "m64n72k16.f32.bf16.bf16") == 4u);
  CHECK(g3.tma_boxes == std::vector<std::array<int, 2>>{{64, 64}});
  if (nv) nvrtc_ok(g1), nvrtc_ok(g2), nvrtc_ok(g3);
}

// ---- head dims that are not 64 / 96 / 128 -----------------------------------------------------

TEST_CASE("sm90_edge_attention_head_dims_80_160_192_256") {
  const bool nv = have_nvrtc();
  auto check = [&](auto kernel, int hd) {
    CAPTURE(hd);
    const auto g = sm90<decltype(kernel)>(4, 2);
    CHECK(g.tma_params == std::vector<int>{0, 1, 2});
    // Slabs as wide as the rows allow: 160 bytes (80) -> 32-byte slabs, 320 (160) -> 64, 384 and 512 -> 128.
    const int w = hd * 2 % 128 == 0 ? 128 : hd * 2 % 64 == 0 ? 64 : 32;
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>(3, {64, w / 2}));
    const std::size_t slabs = static_cast<std::size_t>(hd * 2 / w);
    CHECK(occurrences(g.source, "tj_tma_load_2d(") == 3 * slabs + 1);  // Q, K, V: one copy per slab (+ the prelude)
    CHECK(occurrences(g.source, w == 128 ? "tj_wgmma_desc_mn((tj_ring" : "tj_wgmma_desc_mn_sw((tj_ring") == 1u);  // V, MN-major
    // P·V's K = 64: four k16 steps, three of them at the descriptor's start plus 16 rows of w bytes each (w / 16 units).
    CHECK(occurrences(g.source, fmt::format(", {}u)", w)) >= 1u);
    CHECK(occurrences(g.source, fmt::format(", {}u)", 3 * w)) >= 1u);
    CHECK(occurrences(g.source, fmt::format("m64n{}k16.f32.bf16.bf16", hd)) == 4u);
    CHECK(occurrences(g.source, "m64n64k16.f32.bf16.bf16") == static_cast<std::size_t>(hd / 16));  // S = Q·Kᵀ over hd
    CHECK(g.source.find("through shared memory") == std::string::npos);
    if (nv) nvrtc_ok(g);
  };
  check(examples::FlashAttnFwdTma<64, 64, 80, true, tj::bf16>{}, 80);
  check(examples::FlashAttnFwdTma<64, 64, 160, false, tj::bf16>{}, 160);
  check(examples::FlashAttnFwdTma<64, 64, 192, true, tj::bf16>{}, 192);
  check(examples::FlashAttnFwdTma<64, 64, 256, false, tj::bf16>{}, 256);
}

// ---- blocks narrower than a slab, warps that do not match BLOCK_M, one stage -------------------

TEST_CASE("sm90_edge_blocks_narrower_than_128_bytes") {
  const bool nv = have_nvrtc();
  SUBCASE("K-major, 32 bf16 = 64 bytes: one 64-byte slab with the 64B swizzle, nothing past the block copied") {
    const auto g = sm90<DescGemm<64, 64, 32, tj::bf16>>(4, 3);
    CHECK(g.tma_params == std::vector<int>{0, 1});
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, 32}, {64, 32}});
    CHECK(occurrences(g.source, "tj_mbar_expect_tx(bar, 8192u)") == 1u);  // 2 blocks x 64 rows x 64 bytes
    CHECK(occurrences(g.source, "m64n64k16.f32.bf16.bf16") == 2u);
    CHECK(occurrences(g.source, ", 64);\n") == 2u);  // A and B: 64B-swizzle descriptors (tj_da, tj_db)
    CHECK(occurrences(g.source, "= tj_wgmma_desc_sw(") == 2u);
    CHECK(occurrences(g.source, "tj_wgmma_desc_at(tj_da") == 1u);  // the second k16 step: 32 bytes on, in the slab
    CHECK(occurrences(g.source, "tj_wgmma_desc_at(tj_db") == 1u);
    CHECK(has_diag(g, "held exactly as 1 slab(s) of 64 bytes"));
    if (nv) nvrtc_ok(g);
  }
  SUBCASE("K-major, 16 f16 = 32 bytes: one 32-byte slab, one k step") {
    const auto g = sm90<DescGemm<128, 48, 16, tj::f16>>(8, 2);
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{128, 16}, {48, 16}});
    CHECK(occurrences(g.source, "m64n48k16.f32.f16.f16") == 1u);
    CHECK(occurrences(g.source, ", 32);\n") == 2u);  // A and B: 32B-swizzle descriptors, one k step
    CHECK(occurrences(g.source, "tj_wgmma_desc_at(") == 1u);  // only the prelude's definition
    if (nv) nvrtc_ok(g);
  }
  SUBCASE("MN-major B with N = 32: one 64-byte slab") {
    const auto g = sm90<RegAGemm<64, 32, 64, false, tj::bf16>>(4, 2);
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, 32}});
    CHECK(occurrences(g.source, "tj_wgmma_desc_mn_sw((tj_ring") == 1u);
    CHECK(occurrences(g.source, "tj_wgmma_desc_at(tj_db") == 3u);
    if (nv) nvrtc_ok(g);
  }
  SUBCASE("rows of 144 bytes (72 bf16) are no whole number of 32-byte slabs: 128-byte slabs, the last partly used") {
    const auto g = sm90<RegAGemm<64, 72, 64, false, tj::bf16>>(4, 2);
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, 64}});
    CHECK(has_diag(g, "64 elements (128 bytes) wide"));
  }
  SUBCASE("interpreter") {
    auto dev = tj::Device::interpreter();
    const int M = 70, N = 72, K = 48;  // K = 1.5 blocks of 32
    auto a = rnd<tj::bf16>(static_cast<std::size_t>(M) * K, 7), b = rnd<tj::bf16>(static_cast<std::size_t>(N) * K, 8);
    std::vector<float> c(static_cast<std::size_t>(M) * N);
    TD ad(dev, a.data(), tj::DType::bf16, {M, K}, {K, 1}, {64, 32}), bd(dev, b.data(), tj::DType::bf16, {N, K}, {K, 1}, {64, 32});
    tj::compile<DescGemm<64, 64, 32, tj::bf16>>(dev, {.num_warps = 4, .num_stages = 3}).launch(tj::Grid{2, 2}, ad, bd, c.data(), M, N, K);
    std::vector<double> ref(c.size(), 0.0);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        for (int kk = 0; kk < K; ++kk)
          ref[static_cast<std::size_t>(i) * N + j] += f(a[static_cast<std::size_t>(i) * K + kk]) * f(b[static_cast<std::size_t>(j) * K + kk]);
    CHECK(testing::rel_error(c, ref) < 1e-5);
  }
}

TEST_CASE("sm90_edge_block_m_and_num_warps_disagree") {
  const bool nv = have_nvrtc();
  // BLOCK_M = 128 with 4 warps, or 64 with 8 warps and an MN-major B of one 128-byte slab (N = 64: each group's 32
  // columns would start inside the slab): not a wgmma shape, so no TMA — masked loads and mma.sync, no error.
  const auto g1 = sm90<RegAGemm<64, 64, 64, false, tj::bf16>>(8, 2);
  const auto g2 = sm90<DescGemm<128, 64, 64, tj::bf16>>(4, 2);
  for (const auto* g : {&g1, &g2}) {
    CHECK(g->tma_params.empty());
    CHECK(g->source.find("wgmma.mma_async") == std::string::npos);
    CHECK(g->source.find("tj_mma_bf16(") != std::string::npos);
    if (nv) nvrtc_ok(*g);
  }
}

TEST_CASE("sm90_edge_64_rows_over_several_warp_groups_split_n") {
  // BLOCK_M = 64 with 8 (16) warps: the two (four) warp groups issue m64n(N/g) side by side on their own columns,
  // reading the same A — a block in place, or registers copied to every group — and B at the group's columns.
  const bool nv = have_nvrtc();
  auto check = [&](const tj::codegen::Generated& g, int groups, int ng, bool reg_a, const char* type) {
    CHECK(!g.tma_params.empty());
    CHECK(has_diag(g, fmt::format("with {} warp groups: each issues wgmma m64n{} on its own {} columns", groups, ng, ng)));
    CHECK(occurrences(g.source, fmt::format("wgmma.mma_async.sync.aligned.m64n{}k", ng)) > 0);
    CHECK(occurrences(g.source, fmt::format(".{}.{} ", type, type)) > 0);
    CHECK(g.source.find("tj_mma_", g.source.find("__global__")) == std::string::npos);  // no mma.sync in the kernel
    CHECK(occurrences(g.source, fmt::format("{} warp groups side by side along N", groups)) > 0);
    if (reg_a) CHECK(has_diag(g, "copied to " + std::to_string(groups) + " warp groups"));
    if (nv) nvrtc_ok(g);
  };
  check(sm90<DescGemm<64, 128, 64, tj::bf16>>(8, 2), 2, 64, false, "bf16");             // A and B blocks, K-major B
  check(sm90<DescGemm<64, 96, 64, tj::f16>>(8, 2), 2, 48, false, "f16");                // N = 96: 48 columns a group
  check(sm90<DescGemm<64, 256, 64, tj::bf16>>(16, 2), 4, 64, false, "bf16");            // four warp groups
  check(sm90<RegAGemm<64, 64, 64, true, tj::bf16>>(8, 2), 2, 32, true, "bf16");         // register A, K-major B
  check(sm90<RegAGemm<64, 128, 64, false, tj::bf16>>(8, 2), 2, 64, true, "bf16");       // register A, MN-major B: a slab each
  check(sm90<examples::MatmulV5<64, 64, tj::f8e4m3>>(8, 2), 2, 32, false, "e4m3");     // f8: k32 steps
  // Two dots of one [64, N] extent, one of which cannot split (an MN-major B at N = 64 would split inside its 128-byte
  // slab; a register B has no in-place form): neither splits, both stay on mma.sync as before, no error.
  for (const auto& g : {sm90<TwoDotsGemm<64, 64, 64, false>>(8, 2), sm90<TwoDotsGemm<64, 64, 64, true>>(8, 2)}) {
    CHECK(g.source.find("wgmma.mma_async", g.source.find("__global__")) == std::string::npos);
    CHECK(g.source.find("tj_mma_bf16(", g.source.find("__global__")) != std::string::npos);
    CHECK(g.source.find("warp groups side by side") == std::string::npos);
    if (nv) nvrtc_ok(g);
  }
}

TEST_CASE("sm90_edge_one_stage") {
  const bool nv = have_nvrtc();
  const auto g1 = sm90<DescGemm<64, 96, 64, tj::bf16>>(4, 1);
  CHECK(has_diag(g1, "TMA pipeline of 1 stage(s)"));
  CHECK(g1.source.find("if (tj_tid == 0) tj_issue") != std::string::npos);  // issued at the top of each iteration
  CHECK(occurrences(g1.source, "wgmma.wait_group.sync.aligned 0;") >= 1u);      // the single stage is refilled only when drained
  const auto g2 = sm90<examples::FlashAttnFwdTma<64, 64, 96, true, tj::bf16>>(4, 1);
  const auto g3 = sm90<RegAGemm<64, 64, 64, false, tj::bf16>>(4, 1);
  if (nv) nvrtc_ok(g1), nvrtc_ok(g2), nvrtc_ok(g3);
}

// ---- register-only conversions between NPOT layouts ----------------------------------------

TEST_CASE("sm90_edge_row_stats_between_npot_accumulators_stay_in_registers") {
  const bool nv = have_nvrtc();
  auto check = [&](auto kernel, int warps) {
    const auto g = sm90<decltype(kernel)>(warps, 2);
    CHECK(g.source.find("through shared memory") == std::string::npos);
    CHECK(has_diag(g, "in registers (same lanes and warps)"));
    if (nv) nvrtc_ok(g);
    return g;
  };
  check(examples::FlashAttnFwdTma<64, 96, 64, false, tj::bf16>{}, 4);   // S [64, 96], O [64, 64]
  check(examples::FlashAttnFwdTma<64, 48, 192, true, tj::bf16>{}, 4);   // S [64, 48], O [64, 192]
  check(examples::FlashAttnFwdTma<128, 192, 96, true, tj::f16>{}, 8);   // S [128, 192], O [128, 96]
}

// ---- operand a as the trans of a descriptor block: a transposed masked load, then register A ----

TEST_CASE("sm90_edge_trans_a_operand_from_a_descriptor") {
  struct TransA {  // C = Aᵀ·Bᵀ with A stored [K, M] and B stored [N, K]
    void operator()(tj::Desc<tj::bf16, 64, 64> a, tj::Desc<tj::bf16, 64, 64> b, tj::Ptr<float> c, tj::Size K) const {
      auto acc = tj::for_range(0, K, 64, tj::zeros<float, 64, 64>(),
                               [&](tj::Int k0, auto acc) { return tj::dot(tj::trans(a.load(k0, 0)), tj::trans(b.load(0, k0)), acc); });
      tj::store(c + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), acc);
    }
  };
  const auto g = sm90<TransA>(4, 2);
  CHECK(g.tma_params == std::vector<int>{1});  // only B by TMA; A's trans is a transposed masked load
  CHECK(occurrences(g.source, "\"r\"(tj_pa") == 16u);
  if (have_nvrtc()) nvrtc_ok(g);
  auto dev = tj::Device::interpreter();
  const int K = 80;
  auto a = rnd<tj::bf16>(static_cast<std::size_t>(K) * 64, 9), b = rnd<tj::bf16>(static_cast<std::size_t>(64) * K, 10);
  std::vector<float> c(64 * 64);
  TD ad(dev, a.data(), tj::DType::bf16, {K, 64}, {64, 1}, {64, 64}), bd(dev, b.data(), tj::DType::bf16, {64, K}, {K, 1}, {64, 64});
  tj::compile<TransA>(dev, {.num_warps = 4, .num_stages = 2}).launch(tj::Grid{1}, ad, bd, c.data(), K);
  std::vector<double> ref(c.size(), 0.0);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j)
      for (int kk = 0; kk < K; ++kk) ref[static_cast<std::size_t>(i) * 64 + j] += f(a[static_cast<std::size_t>(kk) * 64 + i]) * f(b[static_cast<std::size_t>(j) * K + kk]);
  CHECK(testing::rel_error(c, ref) < 1e-5);
}

// ---- slabs of the other wgmma types; one block read by two async dots --------------------------

TEST_CASE("sm90_edge_partial_and_multiple_slabs_for_tf32_f8_i8") {
  const bool nv = have_nvrtc();
  auto check = [&](auto kernel, int box_cols, const char* instr, std::size_t n_instr) {
    CAPTURE(instr);
    const auto g = sm90<decltype(kernel)>(4, 2);
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, box_cols}, {64, box_cols}});
    CHECK(occurrences(g.source, instr) == n_instr);
    if (nv) nvrtc_ok(g);
  };
  check(DescGemm<64, 64, 16, float>{}, 16, "m64n64k8.f32.tf32.tf32", 2);    // 64-byte rows: one 64-byte slab
  check(DescGemm<64, 64, 64, float>{}, 32, "m64n64k8.f32.tf32.tf32", 8);    // 256-byte rows: two slabs
  check(DescGemm<64, 64, 256, tj::f8e4m3>{}, 128, "m64n64k32.f32.e4m3.e4m3", 8);
  check(DescGemm<64, 64, 64, std::int8_t>{}, 64, "m64n64k32.s32.s8.s8", 2);  // 64-byte rows: one 64-byte slab
}

TEST_CASE("sm90_edge_one_block_two_async_dots") {
  struct TwoAcc {  // C1 = A·B1ᵀ and C2 = A·B2ᵀ over one K loop: the A block feeds two in-flight wgmma groups
    void operator()(tj::Desc<tj::bf16, 64, 64> a, tj::Desc<tj::bf16, 64, 64> b1, tj::Desc<tj::bf16, 96, 64> b2, tj::Ptr<float> c,
                    tj::Size K) const {
      auto [c1, c2] = tj::for_range(0, K, 64, std::tuple{tj::zeros<float, 64, 64>(), tj::zeros<float, 64, 96>()},
                                    [&](tj::Int k0, auto c1, auto c2) {
                                      auto at = a.load(0, k0);
                                      return std::tuple{tj::dot(at, tj::trans(b1.load(0, k0)), c1), tj::dot(at, tj::trans(b2.load(0, k0)), c2)};
                                    });
      auto r = tj::expand_dims<1>(tj::arange<64>());
      tj::store(c + r * 160 + tj::expand_dims<0>(tj::arange<64>()), c1);
      tj::store(c + r * 160 + 64 + tj::expand_dims<0>(tj::arange<96>()), c2);
    }
  };
  const auto g = sm90<TwoAcc>(4, 3);
  CHECK(has_diag(g, "2 wgmma left in flight"));
  CHECK(g.source.find("wgmma.wait_group.sync.aligned 2;") != std::string::npos);  // keeps this iteration's two groups
  if (have_nvrtc()) nvrtc_ok(g);
}

// ---- bugs ----------------------------------------------------------------------------------

namespace {
/// Whether `src` waits on mbarrier `bar` at the brace depth of its TMA issue (on every path after it), not only
/// inside a loop body that may run zero times.
bool waited_at_issue_depth(const std::string& src, const std::string& bar) {
  std::size_t pos = 0;
  int depth = 0, issue_depth = -1;
  while (pos < src.size()) {
    const std::size_t nl = src.find('\n', pos);
    const std::string ln = src.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (issue_depth < 0 && ln.find("tj_mbar_expect_tx(" + bar + ",") != std::string::npos) issue_depth = depth;
    else if (issue_depth >= 0 && depth == issue_depth && ln.find("tj_mbar_wait(" + bar + ",") != std::string::npos) return true;
    for (char ch : ln) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    if (issue_depth >= 0 && depth < issue_depth) return false;
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return false;
}

/// Q resident, read only inside a K loop whose trip count is a runtime value (0 for some programs: an empty key
/// range, a split that gets no K blocks).
struct ResidentOnlyInLoop {
  void operator()(tj::Desc<tj::bf16, 64, 64> q, tj::Desc<tj::bf16, 64, 64> k, tj::Ptr<float> c, tj::Size n_blocks) const {
    auto qt = q.load(tj::program_id(0) * 64, 0);
    auto acc = tj::for_range(0, n_blocks, 1, tj::zeros<float, 64, 64>(),
                             [&](tj::Int i, auto acc) { return tj::dot(qt, tj::trans(k.load(i * 64, 0)), acc); });
    tj::store(c + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), acc);
  }
};
}  // namespace

TEST_CASE("sm90_edge_resident_block_waited_before_loop_free_exit_sanity") {
  // The checker itself: a resident block read outside any loop is waited for at its issue depth.
  const auto g = sm90<ResidentNested<64, 64, 64, tj::bf16>>(4, 3);
  std::smatch m;
  REQUIRE(std::regex_search(g.source, m, std::regex(R"(tj_mbar_expect_tx\((tj_rbar\d+),)")));
  CHECK(waited_at_issue_depth(g.source, m[1].str()));
}

// Was a bug (found by review): a resident block's TMA copy is issued unconditionally where its desc_load
// stands, but was waited for only by the dots that read it; when those sit in a loop that runs zero times, the
// program exited with the bulk copy still in flight into its shared memory. Now thread 0 waits on every
// resident barrier before the program exits.
TEST_CASE("sm90_edge_resident_copy_waited_before_exit_even_when_its_loop_runs_zero_times") {
  const auto g = sm90<ResidentOnlyInLoop>(4, 2);
  std::smatch m;
  REQUIRE(std::regex_search(g.source, m, std::regex(R"(tj_mbar_expect_tx\((tj_rbar\d+),)")));
  CHECK(waited_at_issue_depth(g.source, m[1].str()));
}

// ---- slabs narrower than 128 bytes, run on the GPU ---------------------------------------------
// The 64B and 32B swizzles (plan_slab_widths) agree between TMA's boxes and wgmma's descriptors only on the
// hardware: every shape above whose rows are 32 or 64 bytes (or a multiple of 64 but not of 128) runs here against
// f64, K-major (A and B through trans) and MN-major (B read directly), ragged edges zero-filled by TMA.

namespace {

template <class T>
double tol_of() {
  return std::is_same_v<T, float> ? 2e-3 : std::is_same_v<T, std::int8_t> ? 0.0 : 1e-5;  // tf32 rounds its inputs
}

/// DescGemm (both operands K-major TMA blocks) on `dev` against f64: M x N x K, ragged on every dim.
template <int BM, int BN, int BK, class T>
void gpu_desc_gemm(const tj::Device& dev, int M, int N, int K, int warps = BM / 16) {
  const std::string shape = fmt::format("{}x{}x{} blocks, {} warps, {}x{}x{}", BM, BN, BK, warps, M, N, K);
  CAPTURE(shape);
  using Out = tj::lang::dot_acc_t<T>;
  auto a = rnd<T>(static_cast<std::size_t>(M) * K, 31), b = rnd<T>(static_cast<std::size_t>(N) * K, 32);
  std::vector<Out> c(static_cast<std::size_t>(M) * N);
  std::memset(c.data(), 0xff, c.size() * sizeof(Out));
  testing::Mirror mem{dev, {}};
  const tj::DType dt = tj::dtype_v<T>;
  TD ad(dev, mem.up(a), dt, {M, K}, {K, 1}, {BM, BK}), bd(dev, mem.up(b), dt, {N, K}, {K, 1}, {BN, BK});
  Out* cd = mem.up(c);
  tj::compile<DescGemm<BM, BN, BK, T>>(dev, {.num_warps = warps, .num_stages = 3, .arch = "sm_90a"})
      .launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, ad, bd, cd, M, N, K);
  mem.down();
  const std::vector<double> got(c.begin(), c.end());
  CHECK(testing::rel_error(got, matmul_ref(a, b, M, N, K, true)) <= tol_of<T>());
}

/// TransAndDirect (one K block read K-major and MN-major) on `dev` against f64, two programs, N ragged.
template <int BM, int BN, int D>
void gpu_trans_and_direct(const tj::Device& dev, int N) {
  const std::string shape = fmt::format("D {}, N {}", D, N);
  CAPTURE(shape);
  const int M = 2 * BM;
  auto q = rnd<tj::bf16>(static_cast<std::size_t>(M) * D, 33), k = rnd<tj::bf16>(static_cast<std::size_t>(N) * D, 34);
  std::vector<float> out(static_cast<std::size_t>(M) * D, -7.0f);
  testing::Mirror mem{dev, {}};
  TD qd(dev, mem.up(q), tj::DType::bf16, {M, D}, {D, 1}, {BM, D}), kd(dev, mem.up(k), tj::DType::bf16, {N, D}, {D, 1}, {BN, D});
  float* od = mem.up(out);
  tj::compile<TransAndDirect<BM, BN, D, tj::bf16>>(dev, {.num_warps = BM / 16, .num_stages = 2, .arch = "sm_90a"})
      .launch(tj::Grid{2}, qd, kd, od, N);
  mem.down();
  const auto ref = trans_and_direct_ref(q, k, M, N, D);
  const std::vector<double> got(out.begin(), out.end());
  CHECK(testing::rel_error(got, ref) < 1e-2);
}

/// RegAGemm with an MN-major B [K, N] on `dev` against f64.
template <int BM, int BN, int BK>
void gpu_rega_mn(const tj::Device& dev, int M, int N, int K, int warps = BM / 16) {
  const std::string shape = fmt::format("BN {}, {} warps, {}x{}x{}", BN, warps, M, N, K);
  CAPTURE(shape);
  auto a = rnd<tj::bf16>(static_cast<std::size_t>(M) * K, 35), b = rnd<tj::bf16>(static_cast<std::size_t>(K) * N, 36);
  std::vector<float> c(static_cast<std::size_t>(M) * N, -7.0f);
  testing::Mirror mem{dev, {}};
  const tj::bf16* ad = mem.up(a);
  TD bd(dev, mem.up(b), tj::DType::bf16, {K, N}, {N, 1}, {BK, BN});
  float* cd = mem.up(c);
  tj::compile<RegAGemm<BM, BN, BK, false, tj::bf16>>(dev, {.num_warps = warps, .num_stages = 2, .arch = "sm_90a"})
      .launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, ad, bd, cd, M, N, K);
  mem.down();
  const std::vector<double> got(c.begin(), c.end());
  CHECK(testing::rel_error(got, matmul_ref(a, b, M, N, K, false)) < 1e-5);
}

}  // namespace

TEST_CASE("sm90_edge_narrow_slabs_gpu_match_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() != 90) {
    MESSAGE("no sm_90 GPU: skipping (TMA and wgmma)");
    return;
  }
  gpu_desc_gemm<64, 64, 32, tj::bf16>(dev, 150, 130, 200);     // 64-byte slabs, K-major
  gpu_desc_gemm<128, 48, 16, tj::f16>(dev, 300, 100, 72);      // 32-byte slabs
  gpu_desc_gemm<64, 64, 16, float>(dev, 100, 90, 56);          // tf32, 64-byte rows
  gpu_desc_gemm<64, 64, 64, std::int8_t>(dev, 100, 70, 208);   // i8, 64-byte rows (K · 1 byte: 16-byte strides)
  gpu_desc_gemm<64, 64, 48, tj::bf16>(dev, 130, 64, 136);      // 96-byte rows: three 32-byte slabs
  gpu_trans_and_direct<64, 64, 96>(dev, 160);                  // D 96: three 64-byte slabs, MN-major N = 96
  gpu_trans_and_direct<64, 64, 80>(dev, 100);                  // D 80: five 32-byte slabs
  gpu_trans_and_direct<128, 64, 160>(dev, 200);                // D 160: five 64-byte slabs, two warp groups
  gpu_rega_mn<64, 32, 64>(dev, 100, 72, 130);                  // MN-major N = 32: one 64-byte slab
  gpu_rega_mn<64, 96, 64>(dev, 64, 200, 128);                  // MN-major N = 96
}

TEST_CASE("sm90_edge_warp_groups_split_n_gpu_match_f64") {
  // 64-row blocks with 8 or 16 warps: the warp groups issue wgmma side by side along N (layout_plan's
  // wgmma_groups_along_n), ragged M, N and K.
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() != 90) {
    MESSAGE("no sm_90 GPU: skipping (TMA and wgmma)");
    return;
  }
  gpu_desc_gemm<64, 128, 64, tj::bf16>(dev, 150, 250, 200, 8);   // two groups of 64 columns
  gpu_desc_gemm<64, 96, 64, tj::f16>(dev, 100, 130, 136, 8);     // two groups of 48 columns
  gpu_desc_gemm<64, 256, 64, tj::bf16>(dev, 70, 300, 128, 16);   // four groups of 64 columns
  gpu_desc_gemm<64, 64, 64, std::int8_t>(dev, 100, 70, 208, 8);  // i8: two groups of 32 columns
  gpu_desc_gemm<64, 64, 16, float>(dev, 100, 90, 56, 8);         // tf32, 64-byte rows
  gpu_rega_mn<64, 128, 64>(dev, 130, 200, 128, 8);               // register A copied to both groups, MN-major B
}
