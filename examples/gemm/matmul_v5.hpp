// examples/gemm/matmul_v5.hpp — rung 5 of the GEMM ladder: tensor descriptors
// and a TMA + mbarrier pipeline.
//
// C[M, N] (f32) = A[M, K] · B[N, K]ᵀ — f16, bf16, f8 (e4m3 / e5m2, with
// per-row scales in MatmulV5Scaled), f32 as tf32; or i8 into an i32 C — both operands K-major, the layout of
// activations times nn.Linear weights (B is stored [N, K], as inference
// engines store weights). Each K step loads a [BLOCK_M, 64] block of A and a
// [BLOCK_N, 64] block of B through their descriptors; on sm_90a the compiler
// copies both with TMA into a ring of `num_stages` 128B-swizzled shared-memory
// stages and feeds wgmma from there with no register round trip, keeping one
// wgmma group in flight across iterations (see docs/gemm.md, rung 5). Blocks
// past M, N or K are zero-filled by the descriptor, so ragged shapes need no
// masks in the loop; the store is masked.
//
// Programs are ordered in groups of GROUP_M block rows (Triton's "grouped
// ordering"): consecutive programs share B blocks and a few A blocks, so the
// working set of the programs running at once stays in L2.
//
// Host side (K-major blocks of 128 bytes = one 128B swizzle span: 64 16-bit or 128 f8 elements):
//   TensorDescriptor a(dev, A, DType::bf16, {M, K}, {K, 1}, {BLOCK_M, 64}, {.swizzle = Swizzle::b128});
//   TensorDescriptor b(dev, B, DType::bf16, {N, K}, {K, 1}, {BLOCK_N, 64}, {.swizzle = Swizzle::b128});
//   kernel.launch(Grid{cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)}, a, b, C, M, N, K);
// with num_warps = BLOCK_M / 16 (one warp group per 64 rows).
#pragma once
#include <optional>
#include <type_traits>

#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

/// The part rungs 5 and 5-f8 share: grouped program order, and the K loop.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, class T>
struct V5Mainloop {
  tj::Int m0, n0;
  tj::Tile<tj::lang::dot_acc_t<T>, BLOCK_M, BLOCK_N> acc;
  V5Mainloop(const tj::Desc<T, BLOCK_M, BLOCK_K>& a, const tj::Desc<T, BLOCK_N, BLOCK_K>& b, const tj::Int& M, const tj::Int& N,
             const tj::Int& K)
      : V5Mainloop(a, b, M, N, K, [](const tj::Int&, const tj::Int&) {}) {}
  /// `before_loop(m0, n0)` runs once the program's block is known and before the K loop. Epilogue operands loaded
  /// there (a bias, per-column scales) are in flight during the main loop and in registers when it ends; loaded after
  /// the loop, the epilogue waits a memory round trip for them and holds them beside the whole accumulator.
  template <class BeforeLoop>
  V5Mainloop(const tj::Desc<T, BLOCK_M, BLOCK_K>& a, const tj::Desc<T, BLOCK_N, BLOCK_K>& b, const tj::Int& M, const tj::Int& N,
             const tj::Int& K, BeforeLoop&& before_loop)
      : m0(tj::program_id(0)), n0(m0), acc(tj::zeros<tj::lang::dot_acc_t<T>, BLOCK_M, BLOCK_N>()) {
    // Grouped ordering: program pid -> (pid_m, pid_n).
    const tj::Int pid = tj::program_id(0);
    const tj::Int num_m = (M + (BLOCK_M - 1)) / BLOCK_M;
    const tj::Int num_n = (N + (BLOCK_N - 1)) / BLOCK_N;
    const tj::Int per_group = num_n * GROUP_M;
    const tj::Int first_m = pid / per_group * GROUP_M;
    const tj::Int group_rows = tj::minimum(num_m - first_m, GROUP_M);
    const tj::Int pid_m = first_m + pid % per_group % group_rows;
    const tj::Int pid_n = pid % per_group / group_rows;
    m0 = pid_m * BLOCK_M;
    n0 = pid_n * BLOCK_N;
    before_loop(m0, n0);
    acc = tj::for_range(0, K, BLOCK_K, acc, [&](tj::Int k0, auto acc) {
      return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc);
    });
  }
};

/// C = A·Bᵀ: f16 or bf16 (BLOCK_K = 64), f8e4m3 / f8e5m2 (128), f32 multiplied as tf32 (32) — C f32 — or i8
/// (BLOCK_K = 128, C i32): 128-byte K rows by default. BK: another K step (a multiple of that; on sm_90a each stage
/// then holds BK · sizeof(T) / 128 slabs per block, copied by one TMA box each).
template <int BLOCK_M, int BLOCK_N, class T, int GROUP_M = 8, int BK = 128 / static_cast<int>(sizeof(T))>
struct MatmulV5 {
  static constexpr int BLOCK_K = BK;
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<Out> c, tj::Size M,
                  tj::Size N, tj::Size K) const {
    V5Mainloop<BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, T> main(a, b, M, N, K);
    auto rm = main.m0 + tj::arange<BLOCK_M>();
    auto rn = main.n0 + tj::arange<BLOCK_N>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), main.acc,
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// Scaled GEMM for f8 (or any input type): C[i, j] = scale_a[i] · scale_b[j] · Σ_k A[i, k] B[j, k] — per-row scales
/// of A and per-column (per output channel) scales of B, applied to the f32 accumulator in the epilogue.
/// Per-tensor scales are the same with constant vectors.
template <int BLOCK_M, int BLOCK_N, class T, int GROUP_M = 8>
struct MatmulV5Scaled {
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulV5Scaled: float inputs (cast an i8 accumulator to f32 first)");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<float> scale_a,
                  tj::Ptr<float> scale_b, tj::Ptr<float> c, tj::Size M, tj::Size N, tj::Size K) const {
    V5Mainloop<BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, T> main(a, b, M, N, K);
    auto rm = main.m0 + tj::arange<BLOCK_M>();
    auto rn = main.n0 + tj::arange<BLOCK_N>();
    auto sa = tj::load(scale_a + rm, rm < M, 0.0f);
    auto sb = tj::load(scale_b + rn, rn < N, 0.0f);
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn),
              main.acc * tj::expand_dims<1>(sa) * tj::expand_dims<0>(sb),
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// Epilogue activations for MatmulV5Fused.
enum class Act { none, relu, silu, gelu_tanh };

/// σ(z) = 1 / (1 + e^-z), given e^-z = 2^t: rsqrt(1 + 2^t)². No division: on CUDA an f32 `/` is the IEEE div.rn,
/// whose fast path gives up when the divisor is huge or infinite — 1 + e^{2u} is +inf for GELU inputs past ~10, which a
/// K = 4096 GEMM of unit-range operands gives for about a third of its outputs — and calls a slow-path subroutine; 128 such
/// call sites per thread (one per accumulator register of a 128x256 tile) also force ptxas to spill around them
/// (255 registers, 344 bytes of spills). exp2 and rsqrt are one MUFU instruction each; 1 + 2^t = +inf gives rsqrt 0,
/// σ = 0, the exact limit.
template <class X>
auto sigmoid_of_exp2(const X& t) {
  auto r = tj::rsqrt(tj::exp2(t) + 1.0f);
  return r * r;
}

/// y = act(x) on an f32 tile: ReLU max(x, 0); SiLU x·σ(x); GELU's tanh form
/// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) = x·σ(2√(2/π)·(x + 0.044715·x³)) (Hendrycks & Gimpel, arXiv 1606.08415),
/// σ through sigmoid_of_exp2 with log2(e) folded into the polynomial's constants.
template <Act A, class X>
auto activate(const X& x) {
  constexpr float log2e = 1.4426950408889634f;
  if constexpr (A == Act::relu) {
    return tj::maximum(x, 0.0f);
  } else if constexpr (A == Act::silu) {
    return x * sigmoid_of_exp2(x * -log2e);
  } else if constexpr (A == Act::gelu_tanh) {
    constexpr float c1 = -2.0f * 0.7978845608028654f * log2e;  // -2·√(2/π)·log2(e)
    constexpr float c3 = c1 * 0.044715f;
    return x * sigmoid_of_exp2(x * (x * x * c3 + c1));
  } else {
    return x;
  }
}

/// C = cast<Out>(act(alpha · A·Bᵀ + bias)) — the GEMM with its epilogue fused (bias per output column,
/// as nn.Linear), written to Out (bf16 / f16 / f32) in the same program: no f32 round trip through memory.
/// The bias is loaded before the K loop (see V5Mainloop): its loads overlap the main loop.
template <int BLOCK_M, int BLOCK_N, class T, Act ACT, class Out = T, int GROUP_M = 8>
struct MatmulV5Fused {
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulV5Fused: float inputs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<float> bias, tj::Ptr<Out> c,
                  tj::Scalar<float> alpha, tj::Size M, tj::Size N, tj::Size K) const {
    std::optional<tj::Tile<float, BLOCK_N>> bias_n;
    V5Mainloop<BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, T> main(a, b, M, N, K, [&](const tj::Int&, const tj::Int& n0) {
      auto rn = n0 + tj::arange<BLOCK_N>();
      bias_n.emplace(tj::load(bias + rn, rn < N, 0.0f));
    });
    auto rm = main.m0 + tj::arange<BLOCK_M>();
    auto rn = main.n0 + tj::arange<BLOCK_N>();
    auto y = activate<ACT>(main.acc * alpha + tj::expand_dims<0>(*bias_n));
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), tj::cast<Out>(y),
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// Split-K for small M (decode): program (tile, split) computes the K range
/// [split · k_split, min(K, (split + 1) · k_split)) of its tile (k_split a
/// multiple of BLOCK_K) and stores the partial sum to ws[split, M, N]; a
/// SplitKReduce launch sums the splits into C. With M = 1..128 a GEMM has few
/// output tiles (N / BLOCK_N), too few to stream the weights at full
/// bandwidth from every SM; splitting K multiplies the programs.
template <int BLOCK_M, int BLOCK_N, class T>
struct MatmulV5SplitK {
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<float> ws, tj::Size M, tj::Size N,
                  tj::Size K, tj::Size k_split) const {
    const tj::Int num_n = (N + (BLOCK_N - 1)) / BLOCK_N;
    const tj::Int pid = tj::program_id(0), split = tj::program_id(1);
    const tj::Int m0 = pid / num_n * BLOCK_M, n0 = pid % num_n * BLOCK_N;
    const tj::Int k_lo = split * k_split;
    const tj::Int k_hi = tj::minimum(k_lo + k_split, K);
    auto acc = tj::for_range(k_lo, k_hi, BLOCK_K, tj::zeros<float, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
      return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc);
    });
    auto rm = m0 + tj::arange<BLOCK_M>();
    auto rn = n0 + tj::arange<BLOCK_N>();
    tj::store(ws + split * (M * N) + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// c[i] = Σ_s ws[s · n + i] for i < n, rounded to Out (f32: as summed): the second launch of split-K, and the cast
/// of an f32 result into a bf16 / f16 C.
template <int BLOCK, class Out = float>
struct SplitKReduce {
  void operator()(tj::Ptr<float> ws, tj::Ptr<Out> c, tj::Size n, tj::Size splits) const {
    auto i = tj::program_id(0) * BLOCK + tj::arange<BLOCK>();
    auto sum = tj::for_range(0, splits, 1, tj::zeros<float, BLOCK>(), [&](tj::Int s, auto acc) {
      return acc + tj::load(ws + s * n + i, i < n, 0.0f);
    });
    tj::store(c + i, tj::cast<Out>(sum), i < n);  // cast<float> of f32 records no node
  }
};

}  // namespace examples
