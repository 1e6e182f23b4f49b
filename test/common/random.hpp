// Fresh random inputs for tests: a new seed per run (printed on failure).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace testing {

inline unsigned fresh_seed() {
  static const unsigned s = std::random_device{}();
  return s;
}

/// Values uniform in [lo, hi), never all zero.
inline std::vector<float> random_floats(std::size_t n, float lo = -4.f, float hi = 4.f, unsigned salt = 0) {
  std::mt19937 g(fresh_seed() + salt);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// n values of element type T (bf16, f16, float, ...) from random_floats(n, lo, hi, salt), converted with T(x).
template <class T>
std::vector<T> random_tensor(std::size_t n, unsigned salt, float lo = -1.f, float hi = 1.f) {
  const auto f = random_floats(n, lo, hi, salt);
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = T(f[i]);
  return out;
}

/// Relative Frobenius error ||a - b|| / ||b||.
template <class A, class B>
double rel_error(const A& a, const B& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    num += d * d;
    den += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

/// The largest element error |a − b| relative to b's largest magnitude (a max-norm companion to rel_error: one lost
/// or unwritten element shows in full here, where the Frobenius norm dilutes it over every element). A NaN in a
/// where b has a number is an infinite error (std::max(worst, NaN) kept `worst`, so NaN outputs passed: found when a
/// test of NaN reaching the varlen forward's outputs did not fail); NaN in both counts as equal.
template <class A, class B>
double max_rel(const A& a, const B& b) {
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) && std::isnan(y)) continue;
      return std::numeric_limits<double>::infinity();
    }
    worst = std::max(worst, std::fabs(x - y));
    scale = std::max(scale, std::fabs(y));
  }
  return worst / scale;
}

}  // namespace testing
