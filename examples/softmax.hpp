// examples/softmax.hpp — row-wise softmax of a [rows, WIDTH] row-major matrix.
//
// Each program normalises BLOCK_M whole rows held in registers: one read and
// one write of every element, the minimum traffic. WIDTH is exact for any
// 2^a·3^b·5^c·7^d: 96 = 32 lanes x 3 registers, no padding to 128 (Triton
// must pad: `tl.arange(0, 96)` is rejected).
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK_M, int WIDTH, class T = float>
struct Softmax {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y, tj::Size rows) const {
    auto r = tj::program_id(0) * BLOCK_M + tj::arange<BLOCK_M>();   // [BLOCK_M] row ids
    auto c = tj::arange<WIDTH>();                                      // [WIDTH] column ids
    auto offs = tj::expand_dims<1>(r) * WIDTH + tj::expand_dims<0>(c);  // [BLOCK_M, WIDTH]
    auto mask = tj::expand_dims<1>(r < rows);                          // [BLOCK_M, 1]
    auto v = tj::cast<float>(tj::load(x + offs, mask, 0.0f));
    auto e = tj::exp(v - tj::expand_dims<1>(tj::max<1>(v)));
    auto s = tj::expand_dims<1>(tj::sum<1>(e));
    tj::store(y + offs, tj::cast<T>(e / s), mask);
  }
};

}  // namespace examples
