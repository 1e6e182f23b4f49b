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

/// The f64 gradients next to a kernel's for [B·H, S, D] tensors: dQ per query
/// head, dK and dV per KV head summed over its `group` query heads (query head
/// bh reads KV head bh / group). `dq`, `dk`, `dv` are the kernel's outputs.
struct GroupedGrads {
  std::vector<double> ref_dq, ref_dk, ref_dv, got_dq, got_dk, got_dv;
};
template <class T>
GroupedGrads grouped_grads(const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v, const std::vector<T>& d_o,
                           const std::vector<T>& dq, const std::vector<T>& dk, const std::vector<T>& dv, int heads_kv_total,
                           int group, int S, int D, bool causal, double scale) {
  auto head = [&](const std::vector<T>& x, int h) {
    std::vector<double> out(static_cast<std::size_t>(S) * D);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[static_cast<std::size_t>(h) * S * D + i]);
    return out;
  };
  GroupedGrads r;
  for (int bkv = 0; bkv < heads_kv_total; ++bkv) {
    std::vector<double> sum_dk(static_cast<std::size_t>(S) * D, 0.0), sum_dv(sum_dk.size(), 0.0);
    for (int g = 0; g < group; ++g) {
      const int bh = bkv * group + g;
      const auto ref = attention_grad_ref(head(q, bh), head(k, bkv), head(v, bkv), head(d_o, bh), S, D, causal, scale);
      r.ref_dq.insert(r.ref_dq.end(), ref.dq.begin(), ref.dq.end());
      const auto gq = head(dq, bh);
      r.got_dq.insert(r.got_dq.end(), gq.begin(), gq.end());
      for (std::size_t i = 0; i < sum_dk.size(); ++i) sum_dk[i] += ref.dk[i], sum_dv[i] += ref.dv[i];
    }
    r.ref_dk.insert(r.ref_dk.end(), sum_dk.begin(), sum_dk.end());
    r.ref_dv.insert(r.ref_dv.end(), sum_dv.begin(), sum_dv.end());
    const auto gk = head(dk, bkv), gv = head(dv, bkv);
    r.got_dk.insert(r.got_dk.end(), gk.begin(), gk.end());
    r.got_dv.insert(r.got_dv.end(), gv.begin(), gv.end());
  }
  return r;
}

}  // namespace testing
