// examples/gemm/matmul_small_m.hpp — a side rung of the GEMM ladder: small M (decode), operands swapped.
//
// C[M, N] (f32) = A[M, K] · B[N, K]ᵀ for M of 1 to 128 — a few tokens times nn.Linear weights. Such a product is
// memory-bound: its time is reading B, N x K weights, once. Rung 5 puts M on wgmma's M side, which is 64 rows at
// least: at M = 1 it multiplies 63 rows of zeros and holds a [64 x 64] A block per pipeline stage for nothing.
//
// This kernel computes the transpose instead, Cᵀ = B · Aᵀ (the "swap AB" of CUTLASS and TensorRT-LLM's decode
// GEMMs): a program's accumulator is the [BLOCK_N, BLOCK_M] tile Cᵀ[n0 : n0 + BLOCK_N, m0 : m0 + BLOCK_M], N fills
// wgmma's 64-row side and the small M is wgmma's N side (m64nBLOCK_Mk16, BLOCK_M = 8, 16, 32, 64 or 128). Per K step
// a stage of the TMA ring holds B's [BLOCK_N, 64] block (8 KiB at BLOCK_N = 64, bf16) and A's [BLOCK_M, 64] block
// (1 KiB at BLOCK_M = 8; rows past M are zero-filled by TMA, never read from memory), so a shallow program can keep
// a deep ring (8 stages) and several programs fit on one SM. The tile is stored transposed (C[m, n] = acc[n - n0,
// m - m0]) with a mask: the wgmma accumulator layout puts 8 consecutive n of one m in 8 lanes, 32-byte runs.
//
// Split K: program (tile, split) sums the K range [split · k_split, min(K, (split + 1) · k_split)) (k_split a
// multiple of BLOCK_K) and stores it to c + split · M · N. With one split, c is C; with more, c is a workspace
// [splits, M, N] that SplitKReduce (matmul_v5.hpp) sums into C in a second launch. At M = 1 the B of a 4096 x 4096
// layer is 64 tiles of 64 rows: splitting K gives the hundreds of programs it takes to stream B from every SM.
//
// Host side (Gemm<T> does this for small M, examples/gemm/gemm.hpp):
//   TensorDescriptor b(dev, B, DType::bf16, {N, K}, {K, 1}, {BLOCK_N, 64}, {.swizzle = Swizzle::b128});
//   TensorDescriptor a(dev, A, DType::bf16, {M, K}, {K, 1}, {BLOCK_M, 64}, {.swizzle = Swizzle::b128});
//   kernel.launch(Grid{cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), splits}, b, a, c_or_ws, M, N, K, k_split);
// with num_warps = BLOCK_N / 16 (one warp group per 64 rows of B).
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

/// Cᵀ tiles of C = A·Bᵀ (see the file comment): B blocks of BLOCK_N rows on wgmma's M side, A blocks of BLOCK_M
/// rows on its N side. f16 / bf16 (BLOCK_K = 64), f8 (128), f32 as tf32 (32); C f32, or Out (bf16 / f16: the f32
/// sum rounded once, for a single split).
template <int BLOCK_N, int BLOCK_M, class T, class Out = float>
struct MatmulSmallM {
  static_assert(BLOCK_N % 64 == 0, "MatmulSmallM: BLOCK_N is wgmma's M side, a multiple of 64 (num_warps = BLOCK_N / 16)");
  static_assert(BLOCK_M % 8 == 0 && BLOCK_M <= 256, "MatmulSmallM: BLOCK_M is wgmma's N side: a multiple of 8, at most 256");
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulSmallM: float inputs (C is f32)");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Ptr<Out> c, tj::Size M, tj::Size N,
                  tj::Size K, tj::Size k_split) const {
    const tj::Int num_n = (N + (BLOCK_N - 1)) / BLOCK_N;
    const tj::Int pid = tj::program_id(0), split = tj::program_id(1);
    const tj::Int n0 = pid % num_n * BLOCK_N, m0 = pid / num_n * BLOCK_M;
    const tj::Int k_lo = split * k_split;
    const tj::Int k_hi = tj::minimum(k_lo + k_split, K);
    // acc[j, i] = Σ_k B[n0 + j, k] · A[m0 + i, k] = C[m0 + i, n0 + j] (over this split's K range).
    auto acc = tj::for_range(k_lo, k_hi, BLOCK_K, tj::zeros<float, BLOCK_N, BLOCK_M>(), [&](tj::Int k0, auto acc) {
      return tj::dot(b.load(n0, k0), tj::trans(a.load(m0, k0)), acc);
    });
    auto rn = n0 + tj::arange<BLOCK_N>();
    auto rm = m0 + tj::arange<BLOCK_M>();
    auto at = c + split * (M * N) + tj::expand_dims<0>(rm) * N + tj::expand_dims<1>(rn);
    auto in = tj::expand_dims<0>(rm < M) & tj::expand_dims<1>(rn < N);
    tj::store(at, tj::cast<Out>(acc), in);  // cast<float> of the f32 accumulator records no node
  }
};

}  // namespace examples
