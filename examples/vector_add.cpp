// Vector add on the best device (a GPU, else the CPU interpreter), checked
// against plain C++. Build: part of the tilejit CMake project (example_vector_add).
#include <cstdio>
#include <random>
#include <vector>

#include "examples/vector_add.hpp"

int main() {
  namespace tj = tilejit;
  const int n = 1 << 20;
  std::mt19937 g(std::random_device{}());
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) x[i] = d(g), y[i] = d(g);

  auto dev = tj::Device::best();
  const std::size_t bytes = n * sizeof(float);
  auto* dx = static_cast<float*>(dev.alloc(bytes));
  auto* dy = static_cast<float*>(dev.alloc(bytes));
  auto* dout = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(dx, x.data(), bytes);
  dev.copy_to_device(dy, y.data(), bytes);

  auto k = tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1});  // 96: exact, 32 lanes x 3 registers
  k.launch(tj::Grid{tj::cdiv(n, 96)}, dx, dy, dout, n);
  dev.copy_to_host(out.data(), dout, bytes);

  int bad = 0;
  for (int i = 0; i < n; ++i) bad += out[i] != x[i] + y[i];
  std::printf("vector_add on %s: %d of %d elements wrong\n", dev.name().c_str(), bad, n);
  dev.free(dx), dev.free(dy), dev.free(dout);
  return bad != 0;
}
