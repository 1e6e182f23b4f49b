// examples/gemm/matmul_v6.hpp — rung 6 of the GEMM ladder: a persistent grid.
//
// C[M, N] = A[M, K] · B[N, K]ᵀ, rung 5's main loop (both operands K-major,
// TMA ring of `num_stages` stages, async wgmma) inside a loop over output
// tiles: the grid has one program per SM (or fewer, when there are fewer
// tiles), and program p computes tiles p, p + P, p + 2P, ... (P programs) in
// grouped order (GROUP_M block rows at a time, Triton's "grouped ordering"):
// the tiles running at once share rows of A and columns of B in L2.
//
// With CompileOptions{.warp_specialize = true} (sm_90a) a producer warp group
// walks the same (tile, K step) space as the consumer warp groups and keeps
// one ring across all of a program's tiles: while the consumers run a tile's
// epilogue (the masked store, or scale / bias / activation / cast), its copies
// for the next tile's first K steps are already in flight. Without it the
// kernel is still persistent (one launch-sized wave, no tail effect), but each
// tile waits for its ring to fill.
//
// Host side (as rung 5; the grid is the persistent one):
//   TensorDescriptor a(dev, A, DType::bf16, {M, K}, {K, 1}, {BLOCK_M, 64}, {.swizzle = Swizzle::b128});
//   TensorDescriptor b(dev, B, DType::bf16, {N, K}, {K, 1}, {BLOCK_N, 64}, {.swizzle = Swizzle::b128});
//   kernel.launch(persistent_grid(M, N, BLOCK_M, BLOCK_N, dev.num_sms()), a, b, C, M, N, K);
// with num_warps = BLOCK_M / 16 (one consumer warp group per 64 rows).
#pragma once
#include <algorithm>
#include <optional>

#include <tilejit/tilejit.hpp>

#include "examples/gemm/matmul_v5.hpp"  // Act, activate

namespace examples {
namespace tj = tilejit;

/// The persistent grid: one program per SM, never more programs than tiles.
inline tj::Grid persistent_grid(long long M, long long N, int block_m, int block_n, int programs) {
  const long long tiles = tj::cdiv(M, block_m) * tj::cdiv(N, block_n);
  return tj::Grid{static_cast<int>(std::max(1LL, std::min<long long>(tiles, programs)))};
}

/// Tile t of the grouped order -> its block origin (m0, n0). The counts are computed once per program (outside
/// the tile loop); origin() is a few integer operations per tile.
template <int BLOCK_M, int BLOCK_N, int GROUP_M>
struct GroupedTiles {
  tj::Int num_m, num_n, count, per_group;
  GroupedTiles(const tj::Int& M, const tj::Int& N)
      : num_m((M + (BLOCK_M - 1)) / BLOCK_M), num_n((N + (BLOCK_N - 1)) / BLOCK_N), count(num_m * num_n), per_group(num_n * GROUP_M) {}
  std::pair<tj::Int, tj::Int> origin(const tj::Int& t) const {
    const tj::Int first_m = t / per_group * GROUP_M;
    const tj::Int group_rows = tj::minimum(num_m - first_m, GROUP_M);
    const tj::Int pid_m = first_m + t % per_group % group_rows;
    const tj::Int pid_n = t % per_group / group_rows;
    return {pid_m * BLOCK_M, pid_n * BLOCK_N};
  }
};

/// Every tile this program owns: `tile(m0, n0)` runs once per tile, in grouped order.
template <int BLOCK_M, int BLOCK_N, int GROUP_M, class F>
void for_each_tile(const tj::Int& M, const tj::Int& N, F&& tile) {
  const GroupedTiles<BLOCK_M, BLOCK_N, GROUP_M> tiles(M, N);
  tj::for_range(tj::program_id(0), tiles.count, tj::num_programs(0), [&](tj::Int t) {
    const auto [m0, n0] = tiles.origin(t);
    tile(m0, n0);
  });
}

/// Rung 5's K loop for the tile at (m0, n0).
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, class T>
auto v6_mainloop(const tj::Desc<T, BLOCK_M, BLOCK_K>& a, const tj::Desc<T, BLOCK_N, BLOCK_K>& b, const tj::Int& m0, const tj::Int& n0,
                 const tj::Int& K) {
  return tj::for_range(0, K, BLOCK_K, tj::zeros<tj::lang::dot_acc_t<T>, BLOCK_M, BLOCK_N>(), [&](tj::Int k0, auto acc) {
    return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc);
  });
}

/// C = A·Bᵀ, persistent: f16 / bf16 / f8 / f32 (as tf32) into an f32 C, i8 into an i32 C.
template <int BLOCK_M, int BLOCK_N, class T, int GROUP_M = 8>
struct MatmulV6 {
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  using Out = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<Out> c, tj::Size M, tj::Size N,
                  tj::Size K) const {
    for_each_tile<BLOCK_M, BLOCK_N, GROUP_M>(M, N, [&](const tj::Int& m0, const tj::Int& n0) {
      auto acc = v6_mainloop<BLOCK_M, BLOCK_N, BLOCK_K, T>(a, b, m0, n0, K);
      auto rm = m0 + tj::arange<BLOCK_M>();
      auto rn = n0 + tj::arange<BLOCK_N>();
      tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
                tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
    });
  }
};

/// C = cast<Out>(act(alpha · A·Bᵀ + bias)), persistent (rung 5's MatmulV5Fused epilogue). The tile's bias is loaded
/// before its K loop, so it is in registers when the loop ends.
template <int BLOCK_M, int BLOCK_N, class T, Act ACT, class Out = T, int GROUP_M = 8>
struct MatmulV6Fused {
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulV6Fused: float inputs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<float> bias, tj::Ptr<Out> c,
                  tj::Scalar<float> alpha, tj::Size M, tj::Size N, tj::Size K) const {
    for_each_tile<BLOCK_M, BLOCK_N, GROUP_M>(M, N, [&](const tj::Int& m0, const tj::Int& n0) {
      auto rb = n0 + tj::arange<BLOCK_N>();
      auto bias_n = tj::load(bias + rb, rb < N, 0.0f);
      auto acc = v6_mainloop<BLOCK_M, BLOCK_N, BLOCK_K, T>(a, b, m0, n0, K);
      auto rm = m0 + tj::arange<BLOCK_M>();
      auto rn = n0 + tj::arange<BLOCK_N>();
      auto y = activate<ACT>(acc * alpha + tj::expand_dims<0>(bias_n));
      tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), tj::cast<Out>(y),
                tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
    });
  }
};

/// C = cast<Out>(A·Bᵀ), persistent, the tile stored through a C descriptor (`Desc<Out, BLOCK_M, BLOCK_N>` over
/// C [M, N]): with CompileOptions{.tma_store = true} on sm_90a the consumers write the tile into a 128B-swizzled
/// shared staging buffer and one thread stores it with TMA (cp.async.bulk.tensor), drained while the next tile's
/// main loop runs (docs/gemm.md, "The next rungs"); elsewhere it is the masked store of MatmulV6. Rows and columns
/// past C's shape are dropped (TMA clips them).
/// Host side: TensorDescriptor c(dev, C, dtype_v<Out>, {M, N}, {N, 1}, {BLOCK_M, 128 / sizeof(Out)}, {.swizzle = Swizzle::b128})
/// (any block shape: a launch re-encodes it with the box the kernel stores); N · sizeof(Out) a multiple of 16 (TMA).
template <int BLOCK_M, int BLOCK_N, class T, class Out = T, int GROUP_M = 8>
struct MatmulV6Store {
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulV6Store: float inputs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Desc<Out, BLOCK_M, BLOCK_N> c, tj::Size M,
                  tj::Size N, tj::Size K) const {
    for_each_tile<BLOCK_M, BLOCK_N, GROUP_M>(M, N, [&](const tj::Int& m0, const tj::Int& n0) {
      auto acc = v6_mainloop<BLOCK_M, BLOCK_N, BLOCK_K, T>(a, b, m0, n0, K);
      c.store(m0, n0, tj::cast<Out>(acc));
    });
  }
};

/// MatmulV6Fused's epilogue stored through a C descriptor: C = cast<Out>(act(alpha · A·Bᵀ + bias)) written with TMA
/// (CompileOptions::tma_store on sm_90a; the masked store elsewhere), drained while the next tile's main loop runs.
/// The whole of issue 4's epilogue list in one kernel: scale, bias, ReLU / SiLU / GELU, cast, store through TMA.
/// Host side: C's descriptor as MatmulV6Store's; bias [N] f32.
template <int BLOCK_M, int BLOCK_N, class T, Act ACT, class Out = T, int GROUP_M = 8>
struct MatmulV6FusedStore {
  static_assert(!std::is_same_v<T, std::int8_t>, "MatmulV6FusedStore: float inputs");
  static constexpr int BLOCK_K = 128 / static_cast<int>(sizeof(T));
  void operator()(tj::Desc<T, BLOCK_M, BLOCK_K> a, tj::Desc<T, BLOCK_N, BLOCK_K> b, tj::Ptr<float> bias,
                  tj::Desc<Out, BLOCK_M, BLOCK_N> c, tj::Scalar<float> alpha, tj::Size M, tj::Size N, tj::Size K) const {
    for_each_tile<BLOCK_M, BLOCK_N, GROUP_M>(M, N, [&](const tj::Int& m0, const tj::Int& n0) {
      auto rb = n0 + tj::arange<BLOCK_N>();
      auto bias_n = tj::load(bias + rb, rb < N, 0.0f);
      auto acc = v6_mainloop<BLOCK_M, BLOCK_N, BLOCK_K, T>(a, b, m0, n0, K);
      c.store(m0, n0, tj::cast<Out>(activate<ACT>(acc * alpha + tj::expand_dims<0>(bias_n))));
    });
  }
};

}  // namespace examples
