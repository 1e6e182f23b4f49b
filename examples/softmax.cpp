// Row softmax at the four widths of the workloads (96, 768, 3072, 12288) on
// the best device, checked against a double-precision reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "examples/softmax.hpp"

namespace tj = tilejit;

template <int BM, int W>
bool run(const tj::Device& dev, int rows, int num_warps) {
  std::mt19937 g(std::random_device{}());
  std::uniform_real_distribution<float> d(-8, 8);
  std::vector<float> x(static_cast<std::size_t>(rows) * W), y(x.size());
  for (auto& v : x) v = d(g);
  const std::size_t bytes = x.size() * sizeof(float);
  auto* dx = static_cast<float*>(dev.alloc(bytes));
  auto* dy = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(dx, x.data(), bytes);
  auto k = tj::compile<examples::Softmax<BM, W>>(dev, {.num_warps = num_warps});
  k.launch(tj::Grid{tj::cdiv(rows, BM)}, dx, dy, rows);
  dev.copy_to_host(y.data(), dy, bytes);
  dev.free(dx), dev.free(dy);
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    const float* xr = &x[static_cast<std::size_t>(r) * W];
    double m = *std::max_element(xr, xr + W), s = 0;
    for (int c = 0; c < W; ++c) s += std::exp(xr[c] - m);
    for (int c = 0; c < W; ++c) worst = std::max(worst, std::fabs(y[static_cast<std::size_t>(r) * W + c] - std::exp(xr[c] - m) / s));
  }
  std::printf("softmax width %5d, %d rows: max abs error %.2e\n", W, rows, worst);
  return worst < 1e-5;
}

int main() {
  auto dev = tj::Device::best();
  std::printf("device: %s\n", dev.name().c_str());
  bool ok = run<32, 96>(dev, 1000, 4) && run<4, 768>(dev, 100, 4) && run<2, 3072>(dev, 20, 8) && run<1, 12288>(dev, 5, 16);
  return ok ? 0 : 1;
}
