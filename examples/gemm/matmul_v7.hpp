// examples/gemm/matmul_v7.hpp — rung 7 of the GEMM ladder: thread-block clusters and TMA multicast.
//
// C[M, N] = A[M, K] · B[N, K]ᵀ as rung 5 (one program per output tile, a TMA ring, async wgmma), with a
// producer warp group (CompileOptions::warp_specialize) and programs launched in clusters of CLUSTER
// (CompileOptions::num_ctas = CLUSTER): the CLUSTER programs of a cluster own vertically adjacent tiles
// (block rows m, m + 1, ... of the same block column n0), so each K step they need the same [BLOCK_N, BLOCK_K]
// block of B. It is loaded with `load_multicast`: the cluster's first program copies it from L2 once, into
// every program's shared memory. Per K step a program then reads BLOCK_M + BLOCK_N / CLUSTER rows from L2
// instead of BLOCK_M + BLOCK_N (128x256 tiles, CLUSTER = 2: 256 instead of 384 rows, a third less L2 traffic);
// cuBLAS's Hopper kernels run in clusters of two for the same reason.
//
// Tile order: clusters walk "cluster tiles" of CLUSTER·BLOCK_M rows by BLOCK_N columns in Triton's grouped
// order (GROUP_M cluster-tile rows at a time). A cluster tile that runs past M still runs every program of
// the cluster through the whole K loop (the multicast needs every program's buffers); the rows past M read
// the descriptor's zero fill and are not stored.
//
// Host side (rung 5's descriptors):
//   kernel.launch(Grid{cluster_grid<BLOCK_M, BLOCK_N, CLUSTER>(M, N)}, a, b, C, M, N, K);
// compiled with {.num_warps = BLOCK_M / 16, .num_stages = S, .warp_specialize = true, .num_ctas = CLUSTER}.
// Without warp_specialize (or off sm_90a) the same kernel runs with each program loading its own B block.
//
// MatmulV7Persistent is rung 6 with clusters: min(cluster tiles, SMs / CLUSTER) clusters, cluster c walking
// cluster tiles c, c + P, ... (P clusters) in grouped order, the producer's ring running on across tiles (the next
// tile's copies in flight during this one's epilogue); launch it on cluster_persistent_grid(...).
#pragma once
#include <algorithm>
#include <type_traits>

#include <tilejit/tilejit.hpp>

#include "examples/gemm/matmul_v6.hpp"  // GroupedTiles

namespace examples {
namespace tj = tilejit;

/// Programs of rung 7: every cluster tile's CLUSTER programs (a multiple of CLUSTER).
template <int BLOCK_M, int BLOCK_N, int CLUSTER>
long long cluster_grid(long long M, long long N) {
  return tj::cdiv(M, static_cast<long long>(BLOCK_M) * CLUSTER) * CLUSTER * tj::cdiv(N, static_cast<long long>(BLOCK_N));
}

/// The K loop of the tile at (m0, n0), B's block multicast across the cluster: the f32 (i32 for i8) accumulator.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, class T>
auto v7_mainloop(const tj::Desc<T, BLOCK_M, BLOCK_K>& a, const tj::Desc<T, BLOCK_N, BLOCK_K>& b, const tj::Int& m0, const tj::Int& n0,
                 const tj::Int& K) {
  return tj::for_range(0, K, BLOCK_K, tj::zeros<tj::lang::dot_acc_t<T>, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
    return tj::dot(a.load(m0, k0), tj::trans(b.load_multicast(n0, k0)), acc);
  });
}

/// The tile at (m0, n0): v7_mainloop, then the masked store.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, class T, class Out>
void v7_tile(const tj::Desc<T, BLOCK_M, BLOCK_K>& a, const tj::Desc<T, BLOCK_N, BLOCK_K>& b, const tj::Ptr<Out>& c, const tj::Int& m0,
             const tj::Int& n0, const tj::Int& M, const tj::Int& N, const tj::Int& K) {
  auto acc = v7_mainloop<BLOCK_M, BLOCK_N, BLOCK_K, T>(a, b, m0, n0, K);
  auto rm = m0 + tj::arange<BLOCK_M>();
  auto rn = n0 + tj::arange<BLOCK_N>();
  tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
}

/// C[M, N] (f32; i32 for i8) = A[M, K] · B[N, K]ᵀ, one program per output tile, programs in clusters of CLUSTER
/// sharing B's block by TMA multicast (compile with warp_specialize and num_ctas = CLUSTER; launch
/// cluster_grid(M, N) programs). A, B: descriptors with [BLOCK_M | BLOCK_N, 128 bytes] blocks, 128B swizzle.
template <int BLOCK_M, int BLOCK_N, class T, int CLUSTER = 2, int GROUP_M = 4>
struct MatmulV7 {
  static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "a cluster is 1, 2 or 4 programs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<Out> c, tj::Size M, tj::Size N,
                  tj::Size K) const {
    // pid -> (cluster tile in grouped order, rank r in the cluster) -> the tile r block rows below its origin.
    const GroupedTiles<BLOCK_M * CLUSTER, BLOCK_N, GROUP_M> tiles(M, N);  // cluster tiles
    const auto [cm0, n0] = tiles.origin(tj::program_id(0) / CLUSTER);
    v7_tile<BLOCK_M, BLOCK_N, BLOCK_K>(a, b, c, cm0 + tj::program_id(0) % CLUSTER * BLOCK_M, n0, M, N, K);
  }
};

/// The persistent grid of rung 7: one program per SM in whole clusters, never more clusters than cluster tiles.
inline tj::Grid cluster_persistent_grid(long long M, long long N, int block_m, int block_n, int cluster, int sms) {
  const long long tiles = tj::cdiv(M, static_cast<long long>(block_m) * cluster) * tj::cdiv(N, static_cast<long long>(block_n));
  return tj::Grid{static_cast<int>(std::max(1LL, std::min<long long>(tiles, sms / cluster)) * cluster)};
}

/// Calls tile(m0, n0) for every tile this program owns in rung 7's persistent order: cluster c walks cluster tiles
/// c, c + P, ... (P clusters) in grouped order; rank r of the cluster takes the tile r block rows below its origin.
template <int BLOCK_M, int BLOCK_N, int CLUSTER, int GROUP_M, class F>
void for_each_cluster_tile(const tj::Int& M, const tj::Int& N, F&& tile) {
  const tj::Int rank = tj::program_id(0) % CLUSTER;
  const GroupedTiles<BLOCK_M * CLUSTER, BLOCK_N, GROUP_M> tiles(M, N);  // cluster tiles
  tj::for_range(tj::program_id(0) / CLUSTER, tiles.count, tj::num_programs(0) / CLUSTER, [&](tj::Int t) {
    const auto [cm0, n0] = tiles.origin(t);
    tile(cm0 + rank * BLOCK_M, n0);
  });
}

/// MatmulV7 on a persistent grid (cluster_persistent_grid): cluster c computes cluster tiles c, c + P, ... (P
/// clusters) in grouped order, the producer's ring running on across tiles. Same arguments and results.
template <int BLOCK_M, int BLOCK_N, class T, int CLUSTER = 2, int GROUP_M = 4>
struct MatmulV7Persistent {
  static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "a cluster is 1, 2 or 4 programs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<Out> c, tj::Size M, tj::Size N,
                  tj::Size K) const {
    for_each_cluster_tile<BLOCK_M, BLOCK_N, CLUSTER, GROUP_M>(M, N, [&](const tj::Int& m0, const tj::Int& n0) {
      v7_tile<BLOCK_M, BLOCK_N, BLOCK_K>(a, b, c, m0, n0, M, N, K);
    });
  }
};

/// MatmulV7Persistent storing cast<Out>(A·Bᵀ) through a C descriptor, as MatmulV6Store (TMA store with
/// CompileOptions::tma_store on sm_90a, the masked store elsewhere). Arguments as MatmulV6Store's.
template <int BLOCK_M, int BLOCK_N, class T, class Out = T, int CLUSTER = 2, int GROUP_M = 4>
struct MatmulV7PersistentStore {
  static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "a cluster is 1, 2 or 4 programs");
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulV7PersistentStore: float inputs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Desc<Out, BLOCK_M, BLOCK_N> c, tj::Size M,
                  tj::Size N, tj::Size K) const {
    for_each_cluster_tile<BLOCK_M, BLOCK_N, CLUSTER, GROUP_M>(M, N, [&](const tj::Int& m0, const tj::Int& n0) {
      c.store(m0, n0, tj::cast<Out>(v7_mainloop<BLOCK_M, BLOCK_N, BLOCK_K, T>(a, b, m0, n0, K)));
    });
  }
};

}  // namespace examples
