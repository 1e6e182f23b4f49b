// examples/gemm/matmul_v5.hpp — rung 5 of the GEMM ladder: tensor descriptors
// and a TMA + mbarrier pipeline.
//
// C[M, N] (f32) = A[M, K] · B[N, K]ᵀ — both operands K-major, the layout of
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
// Host side (K-major blocks of 64 16-bit elements = one 128-byte swizzle span):
//   TensorDescriptor a(dev, A, DType::bf16, {M, K}, {K, 1}, {BLOCK_M, 64}, {.swizzle = Swizzle::b128});
//   TensorDescriptor b(dev, B, DType::bf16, {N, K}, {K, 1}, {BLOCK_N, 64}, {.swizzle = Swizzle::b128});
//   kernel.launch(Grid{cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)}, a, b, C, M, N, K);
// with num_warps = BLOCK_M / 16 (one warp group per 64 rows).
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK_M, int BLOCK_N, class T, int GROUP_M = 8>
struct MatmulV5 {
  static constexpr int BLOCK_K = 64;
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<float> c, tj::Size M,
                  tj::Size N, tj::Size K) const {
    // Grouped ordering: program pid -> (pid_m, pid_n).
    const tj::Int pid = tj::program_id(0);
    const tj::Int num_m = (M + (BLOCK_M - 1)) / BLOCK_M;
    const tj::Int num_n = (N + (BLOCK_N - 1)) / BLOCK_N;
    const tj::Int per_group = num_n * GROUP_M;
    const tj::Int first_m = pid / per_group * GROUP_M;
    const tj::Int group_rows = tj::minimum(num_m - first_m, GROUP_M);
    const tj::Int pid_m = first_m + pid % per_group % group_rows;
    const tj::Int pid_n = pid % per_group / group_rows;
    const tj::Int m0 = pid_m * BLOCK_M, n0 = pid_n * BLOCK_N;

    auto acc = tj::for_range(0, K, BLOCK_K, tj::zeros<float, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
      return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc);
    });
    auto rm = m0 + tj::arange<BLOCK_M>();
    auto rn = n0 + tj::arange<BLOCK_N>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

}  // namespace examples
