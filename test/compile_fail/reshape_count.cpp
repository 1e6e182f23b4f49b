// Must NOT compile: reshaping a [96] tile into [8, 14] (112 elements).
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x) const {
    auto a = tj::reshape<8, 14>(tj::load(x + tj::arange<96>()));
    tj::store(x + tj::expand_dims<1>(tj::arange<8>()) * 14 + tj::expand_dims<0>(tj::arange<14>()), a);
  }
};
int main() { tj::trace(K{}); }
