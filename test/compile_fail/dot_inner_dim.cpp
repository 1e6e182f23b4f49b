// Must NOT compile: dot of a [16, 32] and a [16, 16] tile (a's K = 32, b's K = 16).
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<tj::f16> a, tj::Ptr<float> c) const {
    auto x = tj::load(a + tj::expand_dims<1>(tj::arange<16>()) * 32 + tj::expand_dims<0>(tj::arange<32>()));
    auto y = tj::load(a + tj::expand_dims<1>(tj::arange<16>()) * 16 + tj::expand_dims<0>(tj::arange<16>()));
    tj::store(c + tj::expand_dims<1>(tj::arange<16>()) * 16 + tj::expand_dims<0>(tj::arange<16>()),
              tj::dot(x, y, tj::zeros<float, 16, 16>()));
  }
};
int main() { tj::trace(K{}); }
