// Stream compaction on the best device (a GPU, else the CPU interpreter): the values above 0.5 of 1M uniform
// values in [-1, 1), checked against plain C++ as a multiset (blocks land in ticket order).
// Build: part of the tilejit CMake project (example_compact).
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "examples/compact.hpp"

int main() {
  namespace tj = tilejit;
  const int n = 1 << 20;
  const float threshold = 0.5f;
  std::mt19937 g(std::random_device{}());
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(n), out(n, 0.0f);
  for (auto& v : x) v = d(g);

  auto dev = tj::Device::best();
  auto* dx = static_cast<float*>(dev.alloc(n * sizeof(float)));
  auto* dout = static_cast<float*>(dev.alloc(n * sizeof(float)));
  auto* dcount = static_cast<int*>(dev.alloc(sizeof(int)));
  const int zero = 0;
  dev.copy_to_device(dx, x.data(), n * sizeof(float));
  dev.copy_to_device(dcount, &zero, sizeof(int));

  tj::compile<examples::Compact<1024>>(dev, {.num_warps = 4}).launch(tj::Grid{tj::cdiv(n, 1024)}, dx, dout, dcount, n, threshold);
  int count = 0;
  dev.copy_to_host(&count, dcount, sizeof(int));
  dev.copy_to_host(out.data(), dout, n * sizeof(float));

  std::vector<float> want;
  for (float v : x)
    if (v > threshold) want.push_back(v);
  std::vector<float> got(out.begin(), out.begin() + std::clamp(count, 0, n));
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  const bool ok = got == want;
  std::printf("compact on %s: %d of %d values above %.1f, %s\n", dev.name().c_str(), count, n, threshold,
              ok ? "all present once" : "WRONG");
  dev.free(dx), dev.free(dout), dev.free(dcount);
  return ok ? 0 : 1;
}
