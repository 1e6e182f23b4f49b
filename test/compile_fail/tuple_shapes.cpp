// Must NOT compile: a tuple reduction of a [32] and a [64] tile (several tiles combined must have one shape).
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto [a, b] = tj::reduce<0>(std::tuple{tj::load(x + tj::arange<32>()), tj::arange<64>()}, [](auto l, auto r) {
      auto [v1, i1] = l;
      auto [v2, i2] = r;
      return std::tuple{v1 + v2, i1 + i2};
    });
    tj::store(y, a + tj::cast<float>(b));
  }
};
int main() { tj::trace(K{}); }
