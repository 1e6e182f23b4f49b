// examples/gemm/matmul_v4.hpp — rung 4 of the GEMM ladder: software
// pipelining written in the kernel. The A and B tiles of step k+1 are loaded
// (as loop-carried tiles) before the dot of step k, so the global loads are in
// flight while the tensor cores work; the hardware only waits when the next
// iteration stages them into shared memory. Same wgmma lowering as rung 3
// (BLOCK_K = 64, one warp per 16 rows, sm_90a), A staged with 16-byte stores.
//
// Loads past K are masked (zeros), so the last prefetch is harmless.
// What it leaves on the table: the prefetch lives in registers (one stage);
// TMA/cp.async multi-stage buffers, MN-major B (no transpose on staging),
// warp specialisation and a persistent grid are the next rungs.
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK_M, int BLOCK_N, class T>
struct MatmulV4 {
  static constexpr int BLOCK_K = 64;
  void operator()(tj::Ptr<T> a, tj::Ptr<T> b, tj::Ptr<float> c, tj::Size M, tj::Size N, tj::Size K) const {
    auto rm = tj::program_id(0) * BLOCK_M + tj::arange<BLOCK_M>();
    auto rn = tj::program_id(1) * BLOCK_N + tj::arange<BLOCK_N>();
    auto load_a = [&](const tj::Int& k0) {
      auto rk = k0 + tj::arange<BLOCK_K>();
      return tj::load(a + tj::expand_dims<1>(rm) * K + tj::expand_dims<0>(rk),
                      tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rk < K), 0.0f);
    };
    auto load_b = [&](const tj::Int& k0) {
      auto rk = k0 + tj::arange<BLOCK_K>();
      return tj::load(b + tj::expand_dims<1>(rk) * N + tj::expand_dims<0>(rn),
                      tj::expand_dims<1>(rk < K) & tj::expand_dims<0>(rn < N), 0.0f);
    };
    const tj::Int zero = tj::scalar<std::int32_t>(0);
    auto [acc, a_last, b_last] = tj::for_range(
        0, K, BLOCK_K, std::tuple{tj::zeros<float, BLOCK_M, BLOCK_N>(), load_a(zero), load_b(zero)},
        [&](tj::Int k0, auto acc, auto a_tile, auto b_tile) {
          auto a_next = load_a(k0 + BLOCK_K);  // in flight during the dot below
          auto b_next = load_b(k0 + BLOCK_K);
          return std::tuple{tj::dot(a_tile, b_tile, acc), a_next, b_next};
        });
    (void)a_last, (void)b_last;
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

}  // namespace examples
