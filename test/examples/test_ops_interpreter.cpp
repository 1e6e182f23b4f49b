// The interpreter against plain C++ for every op of the DSL (AllOps).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "test/common/kernels.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {
double op_ref(double v, int col) {
  double a = v > 0 ? std::sqrt(std::fabs(v) + 1) : std::exp2(v) - std::exp(v * 0.5);
  double b = std::max(a, 1 / std::sqrt(std::fabs(v) + 2)) + std::min(v, 0.25) * std::log(std::fabs(v) + 3);
  return b * ((col % 7) - 3.0) / 4 + v;
}
}  // namespace

TEST_CASE("interpreter_all_ops_match_reference") {
  constexpr int M = 8, N = 96;
  const int rows = 21, programs = (rows + M - 1) / M;
  CAPTURE(testing::fresh_seed());
  auto x = testing::random_floats(static_cast<std::size_t>(programs) * M * N, -3, 3, 5);
  std::vector<float> out(x.size(), -999.f), rowstats(static_cast<std::size_t>(programs) * M * 3, -999.f),
      colstats(static_cast<std::size_t>(programs) * N, -999.f), total(static_cast<std::size_t>(programs), -999.f);
  auto k = tj::compile<testing::AllOps<M, N, float>>(tj::Device::interpreter(), {.num_warps = 4});
  k.launch(tj::Grid{programs}, x.data(), out.data(), rowstats.data(), colstats.data(), total.data(), rows);
  std::vector<double> col_ref(colstats.size(), 0.0), tot_ref(total.size(), 0.0);
  for (int r = 0; r < programs * M; ++r) {
    double s = 0, mx = -1e30, mn = 1e30;
    for (int c = 0; c < N; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * N + c;
      if (r >= rows) { REQUIRE(out[i] == -999.f); continue; }
      double y = op_ref(x[i], c);
      REQUIRE(out[i] == doctest::Approx(y).epsilon(1e-5));
      s += y, mx = std::max(mx, y), mn = std::min(mn, y);
      col_ref[static_cast<std::size_t>(r / M) * N + c] += y;
    }
    if (r >= rows) continue;
    tot_ref[static_cast<std::size_t>(r / M)] += s;
    CHECK(rowstats[static_cast<std::size_t>(r) * 3] == doctest::Approx(s).epsilon(1e-4));
    CHECK(rowstats[static_cast<std::size_t>(r) * 3 + 1] == doctest::Approx(mx).epsilon(1e-6));
    CHECK(rowstats[static_cast<std::size_t>(r) * 3 + 2] == doctest::Approx(mn).epsilon(1e-6));
  }
  for (std::size_t i = 0; i < col_ref.size(); ++i) CHECK(colstats[i] == doctest::Approx(col_ref[i]).epsilon(1e-4));
  for (std::size_t i = 0; i < tot_ref.size(); ++i) CHECK(total[i] == doctest::Approx(tot_ref[i]).epsilon(1e-4));
}
