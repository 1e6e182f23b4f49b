// Built against an installed tilejit: traces a kernel, runs it in the interpreter.
#include <tilejit/tilejit.hpp>

#include <cstdio>
#include <vector>

namespace tj = tilejit;

struct Scale {
  void operator()(tj::Ptr<float> x, tj::Size n) const {
    auto i = tj::program_id(0) * 96 + tj::arange<96>();
    auto m = i < n;
    tj::store(x + i, tj::load(x + i, m) * 2.0f, m);
  }
};

int main() {
  std::vector<float> v(200, 1.5f);
  auto k = tj::compile<Scale>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{tj::cdiv(200, 96)}, v.data(), 200);
  for (float x : v)
    if (x != 3.0f) return 1;
  std::puts("consumer ok");
  return 0;
}
