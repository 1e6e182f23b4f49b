// Must NOT compile: adding tiles of shapes [96] and [128].
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x) const {
    auto a = tj::load(x + tj::arange<96>());
    auto b = tj::load(x + tj::arange<128>());
    tj::store(x + tj::arange<96>(), a + b);
  }
};
int main() { tj::trace(K{}); }
