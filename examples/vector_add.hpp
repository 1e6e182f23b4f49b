// examples/vector_add.hpp — out[i] = x[i] + y[i], one BLOCK-wide tile per program.
// BLOCK may be any 2^a·3^b·5^c·7^d: 96 is exact (32 lanes x 3 registers).
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK, class T = float>
struct VecAdd {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y, tj::Ptr<T> out, tj::Size n) const {
    auto offs = tj::program_id(0) * BLOCK + tj::arange<BLOCK>();
    auto mask = offs < n;
    tj::store(out + offs, tj::load(x + offs, mask) + tj::load(y + offs, mask), mask);
  }
};

}  // namespace examples
