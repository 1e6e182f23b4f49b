// Must NOT compile: an atomic add of f16 elements (atomics take 32- and 64-bit integers, f32 and f64).
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<tj::f16> p) const { tj::atomic_add(p + tj::arange<32>(), tj::load(p + tj::arange<32>())); }
};
int main() { tj::trace(K{}); }
