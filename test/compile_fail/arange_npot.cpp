// Must NOT compile: 22 = 2 * 11 has a prime factor above 7.
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x) const { tj::store(x + tj::arange<22>(), 1.0f); }
};
int main() { tj::trace(K{}); }
