// Must NOT compile: a rank-3 descriptor block with two dims above 1 besides the last (its tile would be 3-D).
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Desc<float, 2, 8, 16> d, tj::Ptr<float> x) const {
    tj::store(x + tj::arange<16>(), tj::zeros<float, 16>());
    (void)d;
  }
};
int main() { tj::trace(K{}); }
