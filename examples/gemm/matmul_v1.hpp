// examples/gemm/matmul_v1.hpp — rung 1 of the GEMM ladder: the simplest
// correct tiled GEMM. C[M,N] = A[M,K] · B[K,N], row-major, f16/bf16 inputs,
// f32 accumulation and output.
//
// One program computes a BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K
// steps: masked loads of an A and a B tile, `dot` (tensor cores: mma.sync
// m16n8k16), accumulate. Ragged M, N, K are handled by masks (out-of-range
// elements load as 0). BLOCK_N may be NPOT (96, 192): the accumulator's
// mixed-radix layout is exact.
//
// When it was rung 1, the compiler loaded the A and B tiles in a blocked
// layout and converted them to the mma operand layouts through shared memory
// every step, with no pipelining (docs/gemm.md has those numbers). The same
// text compiled today gets the later rungs' compiler work: operand layouts
// anchored to the loads and rematerialised index vectors (rung 2), and on
// sm_90a with BLOCK_K = 64 and one warp per 16 rows, wgmma (rung 3).
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, class T>
struct MatmulV1 {
  void operator()(tj::Ptr<T> a, tj::Ptr<T> b, tj::Ptr<float> c, tj::Size M, tj::Size N, tj::Size K) const {
    auto rm = tj::program_id(0) * BLOCK_M + tj::arange<BLOCK_M>();
    auto rn = tj::program_id(1) * BLOCK_N + tj::arange<BLOCK_N>();
    auto acc = tj::for_range(0, K, BLOCK_K, tj::zeros<float, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
      auto rk = k0 + tj::arange<BLOCK_K>();
      auto a_tile = tj::load(a + tj::expand_dims<1>(rm) * K + tj::expand_dims<0>(rk),
                             tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rk < K), 0.0f);
      auto b_tile = tj::load(b + tj::expand_dims<1>(rk) * N + tj::expand_dims<0>(rn),
                             tj::expand_dims<1>(rk < K) & tj::expand_dims<0>(rn < N), 0.0f);
      return tj::dot(a_tile, b_tile, acc);
    });
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

}  // namespace examples
