// C = A·Bᵀ test problems shared by the GEMM tests: fresh random inputs and an f64 reference with, per element,
// Σ|a·b| (the scale of that element's own accumulation error bound).
#pragma once
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "test/common/random.hpp"
#include "tilejit/runtime/autotune.hpp"
#include "tilejit/tilejit.hpp"

namespace testing {

/// A [M, K] and B [N, K] fresh random in [-1, 1] (testing::random_tensor, salts `salt` and `salt + 1`); ref[i·N + j]
/// = Σ_k a[i][k]·b[j][k] in f64 over the rounded inputs and mag[i·N + j] = Σ_k |a[i][k]·b[j][k]|.
template <class T>
struct GemmTN {
  int M, N, K;
  std::vector<T> a, b;
  std::vector<double> ref, mag;
  GemmTN(int m, int n, int k, unsigned salt)
      : M(m), N(n), K(k), a(random_tensor<T>(static_cast<std::size_t>(m) * k, salt)),
        b(random_tensor<T>(static_cast<std::size_t>(n) * k, salt + 1)) {
    ref.assign(static_cast<std::size_t>(m) * n, 0.0);
    mag.assign(ref.size(), 0.0);
    std::vector<double> bd(b.size());
    for (std::size_t i = 0; i < b.size(); ++i) bd[i] = static_cast<float>(b[i]);
    std::vector<double> ad(static_cast<std::size_t>(k));
    for (int i = 0; i < m; ++i) {
      for (int kk = 0; kk < k; ++kk) ad[static_cast<std::size_t>(kk)] = static_cast<float>(a[static_cast<std::size_t>(i) * k + kk]);
      for (int j = 0; j < n; ++j) {
        const double* bj = bd.data() + static_cast<std::size_t>(j) * k;
        double s = 0, sa = 0;
        for (int kk = 0; kk < k; ++kk) {
          const double p = ad[static_cast<std::size_t>(kk)] * bj[kk];
          s += p;
          sa += std::abs(p);
        }
        ref[static_cast<std::size_t>(i) * n + j] = s;
        mag[static_cast<std::size_t>(i) * n + j] = sa;
      }
    }
  }
  /// C [M, N] (f32, poisoned with NaN before the run): every element written, each within elem · mag of ref
  /// (elem < 0: f32 accumulation of exact products, 1e-6 + K · 6e-8, i.e. γ_K = K·u with u = 2^-24), and the
  /// relative Frobenius error below `tol`.
  void check(const std::vector<float>& c, double tol = 1e-5, double elem = -1) const {
    if (elem < 0) elem = 1e-6 + K * 6e-8;
    std::size_t unwritten = 0, outside = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (std::isnan(c[i])) {
        ++unwritten;
        continue;
      }
      outside += std::abs(c[i] - ref[i]) > elem * mag[i] + 1e-6;
    }
    CHECK(unwritten == 0);
    CHECK(outside == 0);
    CHECK(rel_error(c, ref) < tol);
  }
  /// C [M, N] in a 16-bit float type (bf16 / f16, poisoned with NaN before the run): every element written, each
  /// within the f32 accumulation bound plus one rounding to Out (relative 2^-8 for bf16's 8 significant bits, 2^-11
  /// for f16's 11), and the relative Frobenius error below the bound (1e-2 bf16, 5e-3 f16).
  template <class Out>
  void check_rounded(const std::vector<Out>& c) const {
    const double u = std::is_same_v<Out, tilejit::bf16> ? 1.0 / 256 : 1.0 / 2048;
    const double elem = 1e-6 + K * 6e-8;
    std::vector<float> f(c.size());
    std::size_t unwritten = 0, outside = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      f[i] = static_cast<float>(c[i]);
      if (std::isnan(f[i])) {
        ++unwritten;
        continue;
      }
      outside += std::abs(f[i] - ref[i]) > u * std::abs(ref[i]) + elem * mag[i] + 1e-6;
    }
    CHECK(unwritten == 0);
    CHECK(outside == 0);
    CHECK(rel_error(f, ref) < (std::is_same_v<Out, tilejit::bf16> ? 1e-2 : 5e-3));
  }
};

/// `host`'s data on `dev`: a device copy for a GPU (free it with dev.free), the host pointer itself for the interpreter.
template <class X>
X* on_device(const tilejit::Device& dev, std::vector<X>& host) {
  if (dev.backend() == tilejit::Backend::interpreter) return host.data();
  auto* p = static_cast<X*>(dev.alloc(host.size() * sizeof(X)));
  dev.copy_to_device(p, host.data(), host.size() * sizeof(X));
  return p;
}

/// C [M, N] read back inside a NaN-poisoned [rows, ld] buffer (rows >= M, ld >= N): how many of C's elements were
/// left unwritten (still NaN), how many lie farther than tol(x) from ref(x) (x = i·N + j), and how many cells of
/// the frame around C were written.
struct FramedCheck {
  std::size_t unwritten = 0, outside = 0, spilled = 0;
};
template <class Out, class Ref, class Tol>
FramedCheck check_framed(const std::vector<Out>& c, int rows, int ld, int M, int N, Ref&& ref, Tol&& tol) {
  FramedCheck r;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < ld; ++j) {
      const double got = static_cast<float>(c[static_cast<std::size_t>(i) * ld + j]);
      if (i >= M || j >= N) {
        r.spilled += !std::isnan(got);
        continue;
      }
      const std::size_t x = static_cast<std::size_t>(i) * N + j;
      if (std::isnan(got)) {
        ++r.unwritten;
        continue;
      }
      const double want = ref(x);
      r.outside += std::abs(got - want) > tol(x, want);
    }
  return r;
}

/// Tuner options keeping only the candidates whose Config::str() is in `keep` (the others pruned: a library call
/// then runs one of those), no persistence, no warm-up, one timed rep.
inline tilejit::TuneOptions keeping(std::set<std::string> keep) {
  tilejit::TuneOptions o;
  o.cache_dir = std::filesystem::path{};
  o.warmup = 0;
  o.reps = 1;
  o.log = [](const std::string&) {};
  o.prune.push_back([keep](const tilejit::Config& c, const tilejit::TuneKey&, const tilejit::Device&) {
    return keep.contains(c.str()) ? std::string{} : std::string{"forced"};
  });
  return o;
}

/// gemm(a, b, c) on `dev` with a 16-bit C (bf16 / f16) poisoned with NaN, starting `offset` elements past a 16-byte
/// aligned allocation (1: C only 2-byte aligned); then p.check_rounded(C) and nothing written around C.
template <class Gemm, class T>
void run_rounded(const tilejit::Device& dev, Gemm& gemm, const GemmTN<T>& p, int offset = 0) {
  CAPTURE(p.M);
  CAPTURE(p.N);
  CAPTURE(p.K);
  auto a = p.a, b = p.b;
  const std::size_t n = static_cast<std::size_t>(p.M) * p.N, off = static_cast<std::size_t>(offset);
  std::vector<T> c(n + 8, T(std::nanf("")));
  T* da = on_device(dev, a);
  T* db = on_device(dev, b);
  T* dc = on_device(dev, c);
  gemm(da, db, dc + offset, p.M, p.N, p.K);
  if (dev.backend() != tilejit::Backend::interpreter) {
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(T));
    dev.free(da), dev.free(db), dev.free(dc);
  }
  p.check_rounded(std::vector<T>(c.begin() + offset, c.begin() + static_cast<std::ptrdiff_t>(off + n)));
  for (std::size_t i = 0; i < c.size(); ++i)
    if (i < off || i >= off + n) CHECK(std::isnan(static_cast<float>(c[i])));
}

}  // namespace testing
