// examples/gemm/matmul_batched.hpp — a batched GEMM through rank-3 tensor
// descriptors (a side rung of the ladder; docs/gemm.md "Side rung: batched").
//
// C[b] (Out) = A[b] · B[b]ᵀ for b < batch: A [batch, M, K], B [batch, N, K]
// (K-major, as rung 5), C [batch, M, N], each one rank-3 descriptor. Program
// (x, y) computes output tile x of batch y with rung 5's K loop; its blocks
// are [1, BLOCK_M, BLOCK_K] and [1, BLOCK_N, BLOCK_K] loaded at (y, m0, k0)
// and (y, n0, k0). The bounds hold per dim: a block past M of batch y reads
// zeros, not batch y + 1's rows, and the store of C's last tile drops the rows
// past M instead of writing them into batch y + 1 — which a [batch · M, N] 2-D
// view of C would do (its bound is batch · M), so M, N and K need not be
// multiples of anything and no mask is written (M is not even a parameter).
//
// On sm_90a the blocks go through TMA as 3-D boxes into the same ring rung 5
// uses; on sm_80..sm_90 (no "a") through the cp.async ring; elsewhere
// (interpreter, HIP) as masked loads of the 2-D slice at batch y. C is stored
// through its descriptor (a TMA store with CompileOptions::tma_store on
// sm_90a, else a masked store).
//
// Host side (128-byte K rows, the 128B swizzle; the kernel re-encodes any
// other block or swizzle it is given):
//   TensorDescriptor a(dev, A, DType::bf16, {batch, M, K}, {M * K, K, 1}, {1, BLOCK_M, 64}, {.swizzle = Swizzle::b128});
//   TensorDescriptor b(dev, B, DType::bf16, {batch, N, K}, {N * K, K, 1}, {1, BLOCK_N, 64}, {.swizzle = Swizzle::b128});
//   TensorDescriptor c(dev, C, DType::f32, {batch, M, N}, {M * N, N, 1}, {1, BLOCK_M, 32});
//   kernel.launch(Grid{cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), batch}, a, b, c, N, K);
// with num_warps = BLOCK_M / 16 (one warp group per 64 rows on sm_90a).
//
// MatmulBatchedPersistent is rung 6 over the batch: one program per SM walks
// tiles t = p, p + P, ... of all batches (t / tiles_per_batch is the batch,
// the rest rung 6's grouped order within it); with a producer warp group
// (CompileOptions::warp_specialize) the next tile's copies fly during a tile's
// epilogue. Launch it with persistent_batched_grid(...).
#pragma once
#include <tilejit/tilejit.hpp>

#include "examples/gemm/matmul_v6.hpp"  // GroupedTiles

namespace examples {
namespace tj = tilejit;

template <int BLOCK_M, int BLOCK_N, class T, class Out = tj::lang::dot_acc_t<T>>
struct MatmulBatched {
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, 1, BLOCK_M, BLOCK_K> a, tj::Desc<T, 1, BLOCK_N, BLOCK_K> b, tj::Desc<Out, 1, BLOCK_M, BLOCK_N> c,
                  tj::Size N, tj::Size K) const {
    const tj::Int batch = tj::program_id(1);
    const tj::Int num_n = (N + (BLOCK_N - 1)) / BLOCK_N;
    const tj::Int m0 = tj::program_id(0) / num_n * BLOCK_M;
    const tj::Int n0 = tj::program_id(0) % num_n * BLOCK_N;
    auto acc = tj::for_range(0, K, BLOCK_K, tj::zeros<tj::lang::dot_acc_t<T>, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
      return tj::dot(a.load(batch, m0, k0), tj::trans(b.load(batch, n0, k0)), acc);
    });
    c.store(batch, m0, n0, tj::cast<Out>(acc));
  }
};

/// The persistent grid of MatmulBatchedPersistent: one program per SM, never more than tiles.
inline tj::Grid persistent_batched_grid(long long batch, long long M, long long N, int block_m, int block_n, int programs) {
  const long long tiles = batch * tj::cdiv(M, block_m) * tj::cdiv(N, block_n);
  return tj::Grid{static_cast<int>(std::max(1LL, std::min<long long>(tiles, programs)))};
}

/// See the file comment: MatmulBatched over a persistent grid, the batch count read from C's descriptor.
template <int BLOCK_M, int BLOCK_N, class T, class Out = tj::lang::dot_acc_t<T>, int GROUP_M = 8>
struct MatmulBatchedPersistent {
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, 1, BLOCK_M, BLOCK_K> a, tj::Desc<T, 1, BLOCK_N, BLOCK_K> b, tj::Desc<Out, 1, BLOCK_M, BLOCK_N> c,
                  tj::Size M, tj::Size N, tj::Size K) const {
    const GroupedTiles<BLOCK_M, BLOCK_N, GROUP_M> tiles(M, N);
    tj::for_range(tj::program_id(0), tiles.count * c.shape(0), tj::num_programs(0), [&](tj::Int t) {
      const tj::Int z = t / tiles.count;
      const auto [m0, n0] = tiles.origin(t % tiles.count);
      auto acc = tj::for_range(0, K, BLOCK_K, tj::zeros<tj::lang::dot_acc_t<T>, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
        return tj::dot(a.load(z, m0, k0), tj::trans(b.load(z, n0, k0)), acc);
      });
      c.store(z, m0, n0, tj::cast<Out>(acc));
    });
  }
};

}  // namespace examples
