// Kernels with loops, shared by the interpreter, codegen and GPU tests.
#pragma once
#include <tilejit/tilejit.hpp>

namespace testing {
namespace tj = tilejit;

/// Row statistics of a [rows, cols] matrix by walking the row in BN-wide
/// chunks: carries a [BM] running max and sum of exp (online softmax's
/// recurrence) and a scalar chunk counter; writes max, sum, and the count.
template <int BM, int BN>
struct RowStatsLoop {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> out, tj::Ptr<std::int32_t> chunks, tj::Size rows, tj::Size cols) const {
    auto r = tj::program_id(0) * BM + tj::arange<BM>();
    auto rmask = r < rows;
    auto m0 = tj::full<float, BM>(-1e30);
    auto l0 = tj::zeros<float, BM>();
    auto n0 = tj::scalar<std::int32_t>(0);
    auto [m, l, n] = tj::for_range(0, cols, BN, std::tuple{m0, l0, n0}, [&](tj::Int c0, auto m, auto l, auto n) {
      auto c = c0 + tj::arange<BN>();
      auto mask = tj::expand_dims<1>(rmask) & tj::expand_dims<0>(c < cols);
      auto v = tj::load(x + tj::expand_dims<1>(r) * cols + tj::expand_dims<0>(c), mask, -1e30f);
      auto m_new = tj::maximum(m, tj::max<1>(v));
      auto p = tj::where(mask, tj::exp(v - tj::expand_dims<1>(m_new)), 0.0f);
      auto l_new = l * tj::exp(m - m_new) + tj::sum<1>(p);
      return std::tuple{m_new, l_new, n + 1};
    });
    tj::store(out + r * 2, m, rmask);
    tj::store(out + r * 2 + 1, l, rmask);
    tj::store(chunks + tj::program_id(0), n);
  }
};

/// Nested loops with a scalar and a tile carry: out[i] = sum_{a<A} sum_{b<B} (i + a*b).
struct NestedLoops {
  void operator()(tj::Ptr<float> out, tj::Size A, tj::Size B) const {
    auto i = tj::arange<96>();
    auto acc = tj::for_range(0, A, 1, tj::zeros<float, 96>(), [&](tj::Int a, auto acc) {
      return tj::for_range(0, B, 1, acc, [&](tj::Int b, auto acc2) { return acc2 + tj::cast<float>(i + a * b); });
    });
    tj::store(out + i, acc);
  }
};

/// Uses a tile made inside the loop body after the loop: must be rejected.
struct LeaksFromLoop {
  void operator()(tj::Ptr<float> x, tj::Size n) const {
    auto i = tj::arange<32>();
    auto leaked = tj::zeros<float, 32>();
    auto acc = tj::for_range(0, n, 1, tj::zeros<float, 32>(), [&](tj::Int, auto acc) {
      leaked = tj::load(x + i);
      return acc + leaked;
    });
    tj::store(x + i, acc + leaked);
  }
};

}  // namespace testing
