// Must NOT compile: a combine of (f32, i32) elements that returns (f32, f32). The one error names both types.
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto o = tj::arange<32>();
    auto [a, b] = tj::associative_scan<0>(std::tuple{tj::load(x + o), o}, [](auto l, auto r) {
      auto [v1, i1] = l;
      auto [v2, i2] = r;
      return std::tuple{v1 + v2, v1};
    });
    tj::store(y + o, a + tj::cast<float>(b));
  }
};
int main() { tj::trace(K{}); }
