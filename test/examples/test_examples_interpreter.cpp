// Every example kernel run by the CPU interpreter against a plain C++
// reference on fresh random data.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

template <class T>
std::vector<T> convert(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = T(v[i]);
  return out;
}
template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(static_cast<float>(v[i]));
  return out;
}

template <int BLOCK, class T>
void check_vector_add(int n) {
  CAPTURE(BLOCK);
  CAPTURE(n);
  CAPTURE(testing::fresh_seed());
  auto dev = tj::Device::interpreter();
  auto x = convert<T>(testing::random_floats(static_cast<std::size_t>(n), -4, 4, 1));
  auto y = convert<T>(testing::random_floats(static_cast<std::size_t>(n), -4, 4, 2));
  std::vector<T> out(static_cast<std::size_t>(n) + 7, T(-77.0f));  // poisoned, with a guard tail
  auto k = tj::compile<examples::VecAdd<BLOCK, T>>(dev, {.num_warps = 1});
  k.launch(tj::Grid{tj::cdiv(n, BLOCK)}, x.data(), y.data(), out.data(), n);
  for (int i = 0; i < n; ++i) {
    float ref = static_cast<float>(T(static_cast<float>(x[static_cast<std::size_t>(i)]) + static_cast<float>(y[static_cast<std::size_t>(i)])));
    REQUIRE(static_cast<float>(out[static_cast<std::size_t>(i)]) == ref);
  }
  for (std::size_t i = static_cast<std::size_t>(n); i < out.size(); ++i) REQUIRE(static_cast<float>(out[i]) == -77.0f);
}

std::vector<double> softmax_ref(const std::vector<double>& x, int rows, int width) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* row = &x[static_cast<std::size_t>(r) * width];
    double m = *std::max_element(row, row + width), s = 0;
    for (int c = 0; c < width; ++c) s += std::exp(row[c] - m);
    for (int c = 0; c < width; ++c) y[static_cast<std::size_t>(r) * width + c] = std::exp(row[c] - m) / s;
  }
  return y;
}

template <int BM, int W, class T>
void check_softmax(int rows, double tol) {
  CAPTURE(W);
  CAPTURE(rows);
  CAPTURE(testing::fresh_seed());
  auto dev = tj::Device::interpreter();
  auto x = convert<T>(testing::random_floats(static_cast<std::size_t>(rows) * W, -6, 6, W));
  std::vector<T> y(x.size(), T(-1.0f));
  auto k = tj::compile<examples::Softmax<BM, W, T>>(dev, {.num_warps = 4});
  k.launch(tj::Grid{tj::cdiv(rows, BM)}, x.data(), y.data(), rows);
  auto ref = softmax_ref(widen(x), rows, W);
  auto got = widen(y);
  for (double v : got) REQUIRE(v >= 0.0);  // every element written (poison was -1)
  CHECK(testing::rel_error(got, ref) < tol);
}

}  // namespace

TEST_CASE("interpreter_vector_add_f32") {
  check_vector_add<96, float>(1000);
  check_vector_add<96, float>(96 * 5);
  check_vector_add<1024, float>(3000);
  check_vector_add<100, float>(250);  // 100 = 2^2*5^2: radix-5 digits
}

TEST_CASE("interpreter_vector_add_half_precisions") {
  check_vector_add<96, tj::f16>(500);
  check_vector_add<96, tj::bf16>(500);
}

TEST_CASE("interpreter_softmax_f32_every_width") {
  check_softmax<4, 96, float>(37, 2e-6);
  check_softmax<2, 768, float>(9, 1e-5);
  check_softmax<1, 3072, float>(3, 2e-5);
  check_softmax<1, 12288, float>(2, 5e-5);
}

TEST_CASE("interpreter_softmax_half_precisions") {
  check_softmax<4, 96, tj::f16>(13, 2e-3);
  check_softmax<4, 96, tj::bf16>(13, 1e-2);
  check_softmax<2, 768, tj::bf16>(5, 1e-2);
}

TEST_CASE("interpreter_rejects_bad_launches_before_running") {
  auto dev = tj::Device::interpreter();
  std::vector<float> a(64, 1.f), b(64, 2.f), c(64);
  auto k = tj::compile<examples::VecAdd<32>>(dev, {.num_warps = 1});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{0}, a.data(), b.data(), c.data(), 64), doctest::Contains("grid.x = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{2}, static_cast<float*>(nullptr), b.data(), c.data(), 64),
                       doctest::Contains("null pointer"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{2}, a.data(), b.data(), c.data(), -5), doctest::Contains("must be >= 0"), tj::InvalidArgument);
  auto* mis = reinterpret_cast<float*>(reinterpret_cast<char*>(a.data()) + 2);
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{2}, mis, b.data(), c.data(), 8), doctest::Contains("not aligned"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{2}, a.data(), b.data(), c.data(), 5'000'000'000LL), doctest::Contains("does not fit"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::compile<examples::VecAdd<32>>(dev, {.num_warps = 3}), doctest::Contains("power of two"), tj::InvalidArgument);
}

TEST_CASE("interpreter_env_switch_selects_the_interpreter") {
  setenv("TILEJIT_INTERPRET", "1", 1);
  CHECK(tj::Device::best().backend() == tj::Backend::interpreter);
  unsetenv("TILEJIT_INTERPRET");
}
