// Kernels that exercise every DSL op, shared by the interpreter and GPU tests.
#pragma once
#include <tilejit/tilejit.hpp>

namespace testing {
namespace tj = tilejit;

/// Elementwise ops, 2-D broadcasting, and reductions along both axes of an
/// [M, N] tile: out[M,N], rowstats[M] (sum, max, min along axis 1),
/// colstats[N] (sum along axis 0), total (scalar sum of the row sums).
template <int M, int N, class T>
struct AllOps {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> out, tj::Ptr<float> rowstats, tj::Ptr<float> colstats,
                  tj::Ptr<float> total, tj::Size rows) const {
    auto r = tj::program_id(0) * M + tj::arange<M>();
    auto c = tj::arange<N>();
    auto rmask = r < rows;
    auto offs = tj::expand_dims<1>(r) * N + tj::expand_dims<0>(c);
    auto mask = tj::expand_dims<1>(rmask) & (tj::expand_dims<0>(c) >= 0);
    auto v = tj::cast<float>(tj::load(x + offs, mask, -1.0f));
    auto a = tj::where(v > 0.0f, tj::sqrt(tj::abs(v) + 1.0f), tj::exp2(v) - tj::exp(v * 0.5f));
    auto b = tj::maximum(a, tj::rsqrt(tj::abs(v) + 2.0f)) + tj::minimum(v, 0.25f) * tj::log(tj::abs(v) + 3.0f);
    auto colw = tj::cast<float>(tj::expand_dims<0>(c) % 7) - 3.0f;  // [1,N] int -> float weights
    auto y = b * colw / 4.0f - (-v);
    tj::store(out + offs, tj::cast<T>(y), mask);
    auto ym = tj::where(mask, y, 0.0f);
    auto rs = tj::sum<1>(ym);
    tj::store(rowstats + r * 3, rs, rmask);
    tj::store(rowstats + r * 3 + 1, tj::max<1>(tj::where(mask, y, -1e30f)), rmask);
    tj::store(rowstats + r * 3 + 2, tj::min<1>(tj::where(mask, y, 1e30f)), rmask);
    tj::store(colstats + tj::program_id(0) * N + c, tj::sum<0>(ym));
    tj::store(total + tj::program_id(0), tj::sum<0>(rs));
  }
};

}  // namespace testing
