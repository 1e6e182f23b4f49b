// f64 references for attention tests: one head's forward (O, LSE) and
// backward (dQ, dK, dV) over row-major [rows, D] matrices.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace testing {

struct AttnRef {
  std::vector<double> o, lse;  // [Sq, D], [Sq]; lse = -1e30 for a row with no key
};

/// Softmax(Q·Kᵀ·scale) · V for Sq queries and Sk keys; causal: query i sees keys j <= i.
inline AttnRef attention_ref(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, int Sq, int Sk,
                             int D, bool causal, double scale) {
  AttnRef r;
  r.o.assign(static_cast<std::size_t>(Sq) * D, 0.0);
  r.lse.assign(static_cast<std::size_t>(Sq), -1e30);
  std::vector<double> s(static_cast<std::size_t>(Sk));
  for (int i = 0; i < Sq; ++i) {
    const int last = causal ? std::min(i, Sk - 1) : Sk - 1;
    if (last < 0) continue;
    double m = -1e300;
    for (int j = 0; j <= last; ++j) {
      double acc = 0;
      for (int d = 0; d < D; ++d) acc += q[static_cast<std::size_t>(i) * D + d] * k[static_cast<std::size_t>(j) * D + d];
      s[static_cast<std::size_t>(j)] = acc * scale;
      m = std::max(m, s[static_cast<std::size_t>(j)]);
    }
    double l = 0;
    for (int j = 0; j <= last; ++j) l += std::exp(s[static_cast<std::size_t>(j)] - m);
    for (int j = 0; j <= last; ++j) {
      const double p = std::exp(s[static_cast<std::size_t>(j)] - m) / l;
      for (int d = 0; d < D; ++d) r.o[static_cast<std::size_t>(i) * D + d] += p * v[static_cast<std::size_t>(j) * D + d];
    }
    r.lse[static_cast<std::size_t>(i)] = m + std::log(l);
  }
  return r;
}

struct AttnGrads {
  std::vector<double> dq, dk, dv;
};

/// Gradients of O = softmax(Q·Kᵀ·scale)·V (square, S queries and keys) for an upstream dO.
inline AttnGrads attention_grad_ref(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                                    const std::vector<double>& d_o, int S, int D, bool causal, double scale) {
  const AttnRef f = attention_ref(q, k, v, S, S, D, causal, scale);
  AttnGrads g;
  g.dq.assign(static_cast<std::size_t>(S) * D, 0.0);
  g.dk.assign(static_cast<std::size_t>(S) * D, 0.0);
  g.dv.assign(static_cast<std::size_t>(S) * D, 0.0);
  auto at = [D](const std::vector<double>& m, int r, int c) { return m[static_cast<std::size_t>(r) * D + c]; };
  for (int i = 0; i < S; ++i) {
    double delta = 0;
    for (int d = 0; d < D; ++d) delta += at(d_o, i, d) * at(f.o, i, d);
    const int last = causal ? i : S - 1;
    for (int j = 0; j <= last; ++j) {
      double s = 0, dp = 0;
      for (int d = 0; d < D; ++d) s += at(q, i, d) * at(k, j, d), dp += at(d_o, i, d) * at(v, j, d);
      const double p = std::exp(s * scale - f.lse[static_cast<std::size_t>(i)]);
      const double ds = p * (dp - delta);
      for (int d = 0; d < D; ++d) {
        g.dv[static_cast<std::size_t>(j) * D + d] += p * at(d_o, i, d);
        g.dq[static_cast<std::size_t>(i) * D + d] += ds * at(k, j, d) * scale;
        g.dk[static_cast<std::size_t>(j) * D + d] += ds * at(q, i, d) * scale;
      }
    }
  }
  return g;
}

}  // namespace testing
