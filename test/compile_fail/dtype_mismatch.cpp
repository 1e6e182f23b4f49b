// Must NOT compile: adding an f16 tile to an f32 tile without a cast.
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x, tj::Ptr<tj::f16> h) const {
    auto i = tj::arange<64>();
    tj::store(x + i, tj::load(x + i) + tj::load(h + i));
  }
};
int main() { tj::trace(K{}); }
