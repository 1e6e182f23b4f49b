// Edge cases of three sm_90a code-generator paths, each checked in the generated text, compiled by NVRTC (ptxas),
// and run by the interpreter (and, where there is a Hopper GPU, the GPU) against a CPU reference on fresh random
// inputs:
// - packed 16-bit carries (plan_packed): f16 as well as bf16; a carry in a loop nested in another loop, whose
//   result the outer loop carries; a carry in a warp-specialised persistent loop; a packed loop result also stored
//   by TMA;
// - zero accumulators (first wgmma with scale-d = 0): s8 -> s32, e4m3 and tf32 products, a register-A product, an
//   accumulator of -0 (A·B + -0 is A·B) and one of a non-zero constant (written as before);
// - resident blocks waited for once before a top-level loop: loops that run zero times, two loops in a row, a read
//   after both, and a cluster of two programs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

/// A [rows, 64] descriptor of 64 × 64 blocks over `p` (bf16 unless `dt` says otherwise).
tj::TensorDescriptor blocks64(const tj::Device& dev, void* p, long long rows, tj::DType dt = tj::DType::bf16) {
  return tj::TensorDescriptor(dev, p, dt, {rows, 64}, {64, 1}, {64, 64});
}

/// FlashAttention-3's carry without the softmax (test_packed_carry.cpp's CarriedP) for element type T.
template <class T, int BM>
struct CarriedPOf {
  void operator()(tj::Desc<T, BM, 64> q, tj::Desc<T, 64, 64> k, tj::Desc<T, 64, 64> v, tj::Ptr<float> o, tj::Size S) const {
    auto q_tile = q.load(0, 0);
    auto init = std::tuple{tj::zeros<float, BM, 64>(), tj::zeros<T, BM, 64>()};
    auto [acc, p_last] = tj::for_range(0, S, 64, init, [&](tj::Int n0, auto acc, auto p_prev) {
      auto s = tj::dot(q_tile, tj::trans(k.load(n0, 0)));
      auto o_prev = tj::dot(p_prev, v.load(tj::maximum(n0 - 64, 0), 0), acc);
      return std::tuple{o_prev, tj::cast<T>(s)};
    });
    auto out = tj::dot(p_last, v.load(S - 64, 0), acc);
    tj::store(o + tj::expand_dims<1>(tj::arange<BM>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), out);
  }
};

/// R rounds of an inner loop over key blocks j: P starts as X, O += P·V_j, P = bf16(Q·K_jᵀ); X = the inner loop's last
/// P (an outer carry fed by the inner loop's result). Finally out = O + X·V_0.
struct NestedP {
  void operator()(tj::Desc<bf, 64, 64> q, tj::Desc<bf, 64, 64> k, tj::Desc<bf, 64, 64> v, tj::Ptr<float> o, tj::Size S,
                  tj::Size R) const {
    auto q_tile = q.load(0, 0);
    auto init = std::tuple{tj::zeros<float, 64, 64>(), tj::zeros<bf, 64, 64>()};
    auto [acc, x_last] = tj::for_range(0, R, 1, init, [&](tj::Int, auto acc, auto x) {
      auto [acc2, p_last] = tj::for_range(0, S, 64, std::tuple{acc, x}, [&](tj::Int n0, auto acc, auto p_prev) {
        auto s = tj::dot(q_tile, tj::trans(k.load(n0, 0)));
        return std::tuple{tj::dot(p_prev, v.load(n0, 0), acc), tj::cast<bf>(s)};
      });
      return std::tuple{acc2, p_last};
    });
    auto out = tj::dot(x_last, v.load(0, 0), acc);
    tj::store(o + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), out);
  }
};

/// CarriedPOf<bf16> per work item t (query rows t·BM ..) of a persistent loop: out[t] = that item's O.
template <int BM>
struct PersistentP {
  void operator()(tj::Desc<bf, BM, 64> q, tj::Desc<bf, 64, 64> k, tj::Desc<bf, 64, 64> v, tj::Ptr<float> o, tj::Size S,
                  tj::Size items) const {
    tj::for_range(tj::program_id(0), items, tj::num_programs(0), [&](tj::Int t) {
      auto q_tile = q.load(t * BM, 0);
      auto init = std::tuple{tj::zeros<float, BM, 64>(), tj::zeros<bf, BM, 64>()};
      auto [acc, p_last] = tj::for_range(0, S, 64, init, [&](tj::Int n0, auto acc, auto p_prev) {
        auto s = tj::dot(q_tile, tj::trans(k.load(n0, 0)));
        return std::tuple{tj::dot(p_prev, v.load(tj::maximum(n0 - 64, 0), 0), acc), tj::cast<bf>(s)};
      });
      auto out = tj::dot(p_last, v.load(S - 64, 0), acc);
      tj::store(o + t * (BM * 64) + tj::expand_dims<1>(tj::arange<BM>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), out);
    });
  }
};

/// CarriedPOf<bf16, 64> whose last P (packed: a dot reads it) is also stored through a descriptor (a TMA store).
struct ResultStored {
  void operator()(tj::Desc<bf, 64, 64> q, tj::Desc<bf, 64, 64> k, tj::Desc<bf, 64, 64> v, tj::Desc<bf, 64, 64> p_out, tj::Ptr<float> o,
                  tj::Size S) const {
    auto q_tile = q.load(0, 0);
    auto init = std::tuple{tj::zeros<float, 64, 64>(), tj::zeros<bf, 64, 64>()};
    auto [acc, p_last] = tj::for_range(0, S, 64, init, [&](tj::Int n0, auto acc, auto p_prev) {
      auto s = tj::dot(q_tile, tj::trans(k.load(n0, 0)));
      return std::tuple{tj::dot(p_prev, v.load(tj::maximum(n0 - 64, 0), 0), acc), tj::cast<bf>(s)};
    });
    p_out.store(0, 0, p_last);
    auto out = tj::dot(p_last, v.load(S - 64, 0), acc);
    tj::store(o + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), out);
  }
};

/// c = A·Bᵀ + full(C) for 64 × 64 blocks of T, accumulated in Acc.
template <class T, class Acc, double C>
struct ConstAcc {
  void operator()(tj::Desc<T, 64, 64> a, tj::Desc<T, 64, 64> b, tj::Ptr<Acc> c) const {
    auto d = tj::dot(a.load(0, 0), tj::trans(b.load(0, 0)), tj::full<Acc, 64, 64>(C));
    tj::store(c + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), d);
  }
};

/// out = bf16(A·Bᵀ)·V: a register-A product with a zero accumulator.
struct RegisterAZero {
  void operator()(tj::Desc<bf, 64, 64> a, tj::Desc<bf, 64, 64> b, tj::Desc<bf, 64, 64> v, tj::Ptr<float> o) const {
    auto p = tj::cast<bf>(tj::dot(a.load(0, 0), tj::trans(b.load(0, 0))));
    auto out = tj::dot(p, v.load(0, 0));
    tj::store(o + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), out);
  }
};

/// Q (resident) read in two top-level loops in a row (S and S2 keys; either may be 0) and after both:
/// out = Σ_{j<S} Q·K_jᵀ + Σ_{j<S2} (Q·K_jᵀ + -0) + Q·K_0ᵀ.
struct ResidentTwoLoops {
  void operator()(tj::Desc<bf, 64, 64> q, tj::Desc<bf, 64, 64> k, tj::Ptr<float> o, tj::Size S, tj::Size S2) const {
    auto q_tile = q.load(0, 0);
    auto a1 = tj::for_range(0, S, 64, tj::zeros<float, 64, 64>(), [&](tj::Int n0, auto acc) {
      return acc + tj::dot(q_tile, tj::trans(k.load(n0, 0)));
    });
    auto a2 = tj::for_range(0, S2, 64, a1, [&](tj::Int n0, auto acc) {
      return acc + tj::dot(q_tile, tj::trans(k.load(n0, 0)), tj::full<float, 64, 64>(-0.0));
    });
    auto out = tj::dot(q_tile, tj::trans(k.load(0, 0)), a2);
    tj::store(o + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), out);
  }
};

/// Program p of a cluster: out[p] = Σ_j Q·K_{p,j}ᵀ, Q (resident, loaded with load_multicast) shared by all programs.
template <int BM>
struct ClusterScores {
  void operator()(tj::Desc<bf, BM, 64> q, tj::Desc<bf, 64, 64> k, tj::Ptr<float> o, tj::Size S) const {
    auto q_tile = q.load_multicast(0, 0);
    auto acc = tj::for_range(0, S, 64, tj::zeros<float, BM, 64>(), [&](tj::Int n0, auto acc) {
      return acc + tj::dot(q_tile, tj::trans(k.load(tj::program_id(0) * S + n0, 0)));
    });
    tj::store(o + tj::program_id(0) * (BM * 64) + tj::expand_dims<1>(tj::arange<BM>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), acc);
  }
};

template <class K>
tj::codegen::Generated gen(const tj::codegen::Options& o) {
  const auto k = tj::trace(K{});
  return tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), o);
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

template <class T>
double as_double(T x) { return static_cast<double>(static_cast<float>(x)); }
template <class T>
float rounded(double x) { return static_cast<float>(T(static_cast<float>(x))); }

/// Σ_d a[i, d]·b[j, d] of row-major [·, 64] blocks.
template <class T>
double dot_row(const std::vector<T>& a, int i, const std::vector<T>& b, int j) {
  double s = 0;
  for (int d = 0; d < 64; ++d) s += as_double(a[static_cast<std::size_t>(i * 64 + d)]) * as_double(b[static_cast<std::size_t>(j * 64 + d)]);
  return s;
}

/// Device buffers for host vectors: the vectors themselves on the interpreter.
struct OnDevice {
  const tj::Device& dev;
  std::vector<void*> owned;
  template <class X>
  X* put(std::vector<X>& h) {
    X* p = testing::on_device(dev, h);
    if (dev.backend() != tj::Backend::interpreter) owned.push_back(p);
    return p;
  }
  template <class X>
  void get(std::vector<X>& h, X* p) const {
    if (dev.backend() == tj::Backend::interpreter) return;
    dev.synchronize();
    dev.copy_to_host(h.data(), p, h.size() * sizeof(X));
  }
  ~OnDevice() {
    for (void* p : owned) dev.free(p);
  }
};

/// Runs kernel K (options `opt`, one program) on three [rows, 64] tensors of T given as descriptors of 64 × 64
/// blocks, then the f32 `out` and `extra` scalars; `out` comes back to the host.
template <class K, class T, class... Extra>
void run_three_blocks(const tj::Device& dev, tj::CompileOptions opt, std::vector<T>& a, std::vector<T>& b, std::vector<T>& c,
                      std::vector<float>& out, Extra... extra) {
  const tj::DType dt = std::is_same_v<T, bf> ? tj::DType::bf16 : tj::DType::f16;
  OnDevice m{dev};
  auto *da = m.put(a), *db = m.put(b), *dc = m.put(c);
  auto* d_out = m.put(out);
  {
    const auto ta = blocks64(dev, da, static_cast<long long>(a.size() / 64), dt);
    const auto tb = blocks64(dev, db, static_cast<long long>(b.size() / 64), dt);
    const auto tc = blocks64(dev, dc, static_cast<long long>(c.size() / 64), dt);
    tj::compile<K>(dev, opt).launch(tj::Grid{1}, ta, tb, tc, d_out, extra...);
  }
  m.get(out, d_out);
}

/// O of CarriedPOf<T, BM> (rows q0 .. q0 + BM of q) in f64, P rounded to T as the kernel rounds it.
template <class T>
std::vector<double> carried_ref(const std::vector<T>& q, int q0, int BM, const std::vector<T>& k, const std::vector<T>& v, int S) {
  std::vector<double> o(static_cast<std::size_t>(BM * 64), 0.0);
  std::vector<float> p(static_cast<std::size_t>(BM * 64), 0.f);
  auto pv = [&](int vb) {
    for (int i = 0; i < BM; ++i)
      for (int d = 0; d < 64; ++d)
        for (int j = 0; j < 64; ++j)
          o[static_cast<std::size_t>(i * 64 + d)] += static_cast<double>(p[static_cast<std::size_t>(i * 64 + j)]) * as_double(v[static_cast<std::size_t>((vb + j) * 64 + d)]);
  };
  for (int n0 = 0; n0 < S; n0 += 64) {
    pv(std::max(n0 - 64, 0));
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < 64; ++j) p[static_cast<std::size_t>(i * 64 + j)] = rounded<T>(dot_row(q, q0 + i, k, n0 + j));
  }
  pv(S - 64);
  return o;
}

template <class T>
void carried_matches(const tj::Device& dev, tj::CompileOptions opt) {
  constexpr int S = 256;
  auto q = testing::random_tensor<T>(64 * 64, 91), k = testing::random_tensor<T>(S * 64, 92), v = testing::random_tensor<T>(S * 64, 93);
  std::vector<float> o(64 * 64, std::nanf(""));
  run_three_blocks<CarriedPOf<T, 64>>(dev, opt, q, k, v, o, S);
  CHECK(testing::rel_error(o, carried_ref(q, 0, 64, k, v, S)) < 5e-3);
}

void nested_matches(const tj::Device& dev, int S, int R) {
  auto q = testing::random_tensor<bf>(64 * 64, 101), k = testing::random_tensor<bf>(256 * 64, 102), v = testing::random_tensor<bf>(256 * 64, 103);
  std::vector<float> o(64 * 64, std::nanf(""));
  run_three_blocks<NestedP>(dev, {.num_warps = 4, .num_stages = 2}, q, k, v, o, S, R);
  std::vector<double> ref(64 * 64, 0.0);
  std::vector<float> x(64 * 64, 0.f), p(64 * 64);
  auto pv = [&](const std::vector<float>& a, int vb) {
    for (int i = 0; i < 64; ++i)
      for (int d = 0; d < 64; ++d)
        for (int j = 0; j < 64; ++j)
          ref[static_cast<std::size_t>(i * 64 + d)] += static_cast<double>(a[static_cast<std::size_t>(i * 64 + j)]) * as_double(v[static_cast<std::size_t>((vb + j) * 64 + d)]);
  };
  for (int r = 0; r < R; ++r) {
    p = x;
    for (int n0 = 0; n0 < S; n0 += 64) {
      pv(p, n0);
      for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) p[static_cast<std::size_t>(i * 64 + j)] = rounded<bf>(dot_row(q, i, k, n0 + j));
    }
    x = p;
  }
  pv(x, 0);
  CAPTURE(S);
  CAPTURE(R);
  CHECK(testing::rel_error(o, ref) < 5e-3);
}

void persistent_matches(const tj::Device& dev, tj::CompileOptions opt, int programs) {
  constexpr int BM = 128, S = 192, items = 3;
  auto q = testing::random_tensor<bf>(items * BM * 64, 111), k = testing::random_tensor<bf>(S * 64, 112), v = testing::random_tensor<bf>(S * 64, 113);
  std::vector<float> o(items * BM * 64, std::nanf(""));
  OnDevice m{dev};
  auto *dq = m.put(q), *dk = m.put(k), *dv = m.put(v);
  auto* d_o = m.put(o);
  {
    const tj::TensorDescriptor tq(dev, dq, tj::DType::bf16, {items * BM, 64}, {64, 1}, {BM, 64});
    const auto tk = blocks64(dev, dk, S);
    const auto tv = blocks64(dev, dv, S);
    tj::compile<PersistentP<BM>>(dev, opt).launch(tj::Grid{programs}, tq, tk, tv, d_o, S, items);
  }
  m.get(o, d_o);
  std::vector<double> ref;
  for (int t = 0; t < items; ++t) {
    const auto r = carried_ref(q, t * BM, BM, k, v, S);
    ref.insert(ref.end(), r.begin(), r.end());
  }
  CHECK(testing::rel_error(o, ref) < 5e-3);
}

void stored_matches(const tj::Device& dev, tj::CompileOptions opt) {
  constexpr int S = 192;
  auto q = testing::random_tensor<bf>(64 * 64, 121), k = testing::random_tensor<bf>(S * 64, 122), v = testing::random_tensor<bf>(S * 64, 123);
  std::vector<bf> p(64 * 64, bf(std::nanf("")));
  std::vector<float> o(64 * 64, std::nanf(""));
  OnDevice m{dev};
  auto *dq = m.put(q), *dk = m.put(k), *dv = m.put(v), *dp = m.put(p);
  auto* d_o = m.put(o);
  {
    const auto tq = blocks64(dev, dq, 64);
    const auto tk = blocks64(dev, dk, S);
    const auto tv = blocks64(dev, dv, S);
    const auto tp = blocks64(dev, dp, 64);
    tj::compile<ResultStored>(dev, opt).launch(tj::Grid{1}, tq, tk, tv, tp, d_o, S);
  }
  m.get(o, d_o);
  m.get(p, dp);
  CHECK(testing::rel_error(o, carried_ref(q, 0, 64, k, v, S)) < 5e-3);
  // The last P is bf16(Q·K_lastᵀ): within one bf16 rounding of it (the f32 sum order may differ).
  int far = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      const double s = dot_row(q, i, k, S - 64 + j);
      far += std::abs(as_double(p[static_cast<std::size_t>(i * 64 + j)]) - s) > 1e-2 * std::abs(s) + 1e-3;
    }
  CHECK(far == 0);
}

/// ConstAcc<T, Acc, C>: c = A·Bᵀ + C on fresh inputs of T (integers in [-100, 100] for i8).
template <class T, class Acc, double C>
void const_acc_matches(const tj::Device& dev, tj::DType dt) {
  constexpr bool integer = std::is_same_v<T, std::int8_t>;
  auto a = testing::random_tensor<T>(64 * 64, 131, integer ? -100.f : -1.f, integer ? 100.f : 1.f);
  auto b = testing::random_tensor<T>(64 * 64, 132, integer ? -100.f : -1.f, integer ? 100.f : 1.f);
  std::vector<Acc> c(64 * 64, Acc(-7));
  OnDevice m{dev};
  auto *da = m.put(a), *db = m.put(b);
  auto* dc = m.put(c);
  {
    const auto ta = blocks64(dev, da, 64, dt);
    const auto tb = blocks64(dev, db, 64, dt);
    tj::compile<ConstAcc<T, Acc, C>>(dev, {.num_warps = 4, .num_stages = 2}).launch(tj::Grid{1}, ta, tb, dc);
  }
  m.get(c, dc);
  std::vector<double> ref(64 * 64);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) ref[static_cast<std::size_t>(i * 64 + j)] = C + dot_row(a, i, b, j);
  if constexpr (integer) {
    int wrong = 0;
    for (std::size_t i = 0; i < c.size(); ++i) wrong += static_cast<double>(c[i]) != ref[i];
    CHECK(wrong == 0);
  } else {
    // tf32 rounds the inputs; Hopper's f8 wgmma accumulates with about 14 bits of mantissa (DeepSeek-V3 report,
    // §3.3.2), so sums of exact f8 products stray by ~1e-4; bf16 products and sums are exact in f32 here.
    CHECK(testing::rel_error(c, ref) < (std::is_same_v<T, float> ? 2e-3 : std::is_same_v<T, tj::f8e4m3> ? 1e-3 : 1e-5));
  }
}

void register_a_zero_matches(const tj::Device& dev) {
  auto a = testing::random_tensor<bf>(64 * 64, 141), b = testing::random_tensor<bf>(64 * 64, 142), v = testing::random_tensor<bf>(64 * 64, 143);
  std::vector<float> o(64 * 64, std::nanf(""));
  run_three_blocks<RegisterAZero>(dev, {.num_warps = 4, .num_stages = 2}, a, b, v, o);
  std::vector<double> ref(64 * 64, 0.0);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      const double p = rounded<bf>(dot_row(a, i, b, j));
      for (int d = 0; d < 64; ++d) ref[static_cast<std::size_t>(i * 64 + d)] += p * as_double(v[static_cast<std::size_t>(j * 64 + d)]);
    }
  CHECK(testing::rel_error(o, ref) < 5e-3);
}

/// Every zero-accumulator case on `dev`: s8 -> s32, e4m3, tf32, bf16 with -0 and with 1.5, and a register-A dot.
void zero_acc_cases_match(const tj::Device& dev) {
  const_acc_matches<std::int8_t, std::int32_t, 0.0>(dev, tj::DType::i8);
  const_acc_matches<tj::f8e4m3, float, 0.0>(dev, tj::DType::f8e4nv);
  const_acc_matches<float, float, 0.0>(dev, tj::DType::f32);
  const_acc_matches<bf, float, -0.0>(dev, tj::DType::bf16);
  const_acc_matches<bf, float, 1.5>(dev, tj::DType::bf16);
  register_a_zero_matches(dev);
}

void resident_matches(const tj::Device& dev, int S, int S2) {
  constexpr int rows = 256;
  auto q = testing::random_tensor<bf>(64 * 64, 151), k = testing::random_tensor<bf>(rows * 64, 152);
  std::vector<float> o(64 * 64, std::nanf(""));
  OnDevice m{dev};
  auto *dq = m.put(q), *dk = m.put(k);
  auto* d_o = m.put(o);
  {
    const auto tq = blocks64(dev, dq, 64);
    const auto tk = blocks64(dev, dk, rows);
    tj::compile<ResidentTwoLoops>(dev, {.num_warps = 4, .num_stages = 2}).launch(tj::Grid{1}, tq, tk, d_o, S, S2);
  }
  m.get(o, d_o);
  std::vector<double> ref(64 * 64, 0.0);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      double r = dot_row(q, i, k, j);
      for (int n0 = 0; n0 < S; n0 += 64) r += dot_row(q, i, k, n0 + j);
      for (int n0 = 0; n0 < S2; n0 += 64) r += dot_row(q, i, k, n0 + j);
      ref[static_cast<std::size_t>(i * 64 + j)] = r;
    }
  CAPTURE(S);
  CAPTURE(S2);
  CHECK(testing::rel_error(o, ref) < 1e-5);
}

void cluster_matches(const tj::Device& dev, tj::CompileOptions opt) {
  constexpr int BM = 128, S = 128, programs = 2;
  auto q = testing::random_tensor<bf>(BM * 64, 161), k = testing::random_tensor<bf>(programs * S * 64, 162);
  std::vector<float> o(programs * BM * 64, std::nanf(""));
  OnDevice m{dev};
  auto *dq = m.put(q), *dk = m.put(k);
  auto* d_o = m.put(o);
  {
    const tj::TensorDescriptor tq(dev, dq, tj::DType::bf16, {BM, 64}, {64, 1}, {BM, 64});
    const auto tk = blocks64(dev, dk, programs * S);
    tj::compile<ClusterScores<BM>>(dev, opt).launch(tj::Grid{programs}, tq, tk, d_o, S);
  }
  m.get(o, d_o);
  std::vector<double> ref(programs * BM * 64, 0.0);
  for (int p = 0; p < programs; ++p)
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < 64; ++j)
        for (int n0 = 0; n0 < S; n0 += 64) ref[static_cast<std::size_t>((p * BM + i) * 64 + j)] += dot_row(q, i, k, p * S + n0 + j);
  CHECK(testing::rel_error(o, ref) < 1e-5);
}

const tj::CompileOptions kWs8{.num_warps = 8, .num_stages = 2, .warp_specialize = true, .pingpong = true};
const tj::CompileOptions kCluster{.num_warps = 8, .num_stages = 2, .warp_specialize = true, .num_ctas = 2};

}  // namespace

TEST_CASE("packed_edges_f16_carry") {
  const auto g = gen<CarriedPOf<tj::f16, 64>>({.num_warps = 4, .num_stages = 2});
  const std::string& src = g.source;
  CHECK(count(src, "unsigned v") >= 2);
  CHECK(count(src, "// f16 packed in pairs") == 2);  // the carry and the loop's result
  CHECK(src.find("bf16 packed in pairs") == std::string::npos);
  CHECK(std::regex_search(src, std::regex(R"(y\d+\[0\] = tj_pack_f16x2\(v\d+\[0\], v\d+\[1\]\);)")));
  CHECK(src.find("tj_f16x2_lo(v") == std::string::npos);  // nothing unpacks
  CHECK(src.find(".f32.f16.f16") != std::string::npos);
  testing::compiles_for_sm90a_without_spills(src, "packed_edges_f16.cu");
  carried_matches<tj::f16>(tj::Device::interpreter(), {.num_warps = 4});
}

TEST_CASE("packed_edges_nested_loop_result_carried_outside") {
  const auto g = gen<NestedP>({.num_warps = 4, .num_stages = 2});
  const std::string& src = g.source;
  // Packed: the inner carry (read by P·V only) and the outer loop's result (read by the last dot only). Not the outer
  // carry (the inner carry's initial value) nor the inner loop's result (the outer carry's next value).
  CHECK(count(src, "bf16 packed in pairs") == 2);
  CHECK(count(src, "tj_bf16x2_lo(v") == 16);  // the inner loop's result, unpacked once per outer iteration
  testing::compiles_for_sm90a(src, "packed_edges_nested.cu");
  for (const auto& [S, R] : {std::pair{128, 2}, std::pair{0, 2}, std::pair{192, 1}, std::pair{128, 0}})
    nested_matches(tj::Device::interpreter(), S, R);
}

TEST_CASE("packed_edges_persistent_warp_specialised") {
  const auto g = gen<PersistentP<128>>({.num_warps = 8, .num_stages = 2, .warp_specialize = true, .pingpong = true});
  const std::string& src = g.source;
  CHECK(testing::has_diagnostic(g, "warp specialised: 8 consumer warp(s)"));
  CHECK(count(src, "bf16 packed in pairs") == 2);
  CHECK(src.find("tj_bf16x2_lo(v") == std::string::npos);
  testing::compiles_for_sm90a(src, "packed_edges_persistent.cu");
  persistent_matches(tj::Device::interpreter(), kWs8, 2);
}

TEST_CASE("packed_edges_result_also_stored_by_tma") {
  const auto g = gen<ResultStored>({.num_warps = 4, .num_stages = 2, .tma_store = true});
  CHECK(testing::has_diagnostic(g, "stored by TMA"));
  // The carry is packed; the loop's result, read by the TMA store too, stays in f32 registers (plan_packed counts a
  // desc_store's value, args[3], as a reader: the staging would otherwise unpack every element).
  CHECK(count(g.source, "bf16 packed in pairs") == 1);
  CHECK(count(g.source, "tj_bf16x2_lo(v") == 16);  // the result unpacks the carry once, after the loop (32 registers)
  testing::compiles_for_sm90a(g.source, "packed_edges_stored.cu");
  stored_matches(tj::Device::interpreter(), {.num_warps = 4, .tma_store = true});
}

TEST_CASE("zero_acc_edges_types_and_constants") {
  auto first_wgmma = [](const std::string& src) {
    const std::size_t p = src.find("wgmma.mma_async");
    REQUIRE(p != std::string::npos);
    return src.substr(p, src.find('\n', p) - p);
  };
  {  // s8 -> s32: "=r" and scale-d 0, the only immediate
    const auto g = gen<ConstAcc<std::int8_t, std::int32_t, 0.0>>({.num_warps = 4, .num_stages = 2});
    const std::string l = first_wgmma(g.source);
    CHECK(l.find(".s32.s8.s8") != std::string::npos);
    CHECK(l.find("%33, 0; }") != std::string::npos);
    CHECK(l.find("\"=r\"(v") != std::string::npos);
    testing::compiles_for_sm90a(g.source, "zero_acc_s8.cu");
  }
  {  // e4m3 and tf32: scale-d 0, imm-scale-a, imm-scale-b
    const auto g8 = gen<ConstAcc<tj::f8e4m3, float, 0.0>>({.num_warps = 4, .num_stages = 2});
    CHECK(first_wgmma(g8.source).find("%33, 0, 1, 1; }") != std::string::npos);
    testing::compiles_for_sm90a(g8.source, "zero_acc_e4m3.cu");
    const auto g32 = gen<ConstAcc<float, float, 0.0>>({.num_warps = 4, .num_stages = 2});
    CHECK(first_wgmma(g32.source).find("%33, 0, 1, 1; }") != std::string::npos);
    testing::compiles_for_sm90a(g32.source, "zero_acc_tf32.cu");
  }
  {  // -0: A·B + -0 is A·B (also for A·B = -0), so not written either; 1.5 is
    const auto gm = gen<ConstAcc<bf, float, -0.0>>({.num_warps = 4, .num_stages = 2});
    CHECK(gm.source.find("= A·B: the first wgmma has scale-d = 0") != std::string::npos);
    const auto gc = gen<ConstAcc<bf, float, 1.5>>({.num_warps = 4, .num_stages = 2});
    CHECK(gc.source.find("scale-d = 0") == std::string::npos);
    CHECK(first_wgmma(gc.source).find("%33, 1, 1, 1, 0, 0; }") != std::string::npos);
    CHECK(first_wgmma(gc.source).find("\"+f\"(v") != std::string::npos);
    CHECK(std::regex_search(gc.source, std::regex(R"(float v\d+\[32\];\n  v\d+\[0\] = v\d+\[0\];)")));
    testing::compiles_for_sm90a(gc.source, "const_acc.cu");
  }
  {  // register A: scale-d 0 in the register-A form
    const auto g = gen<RegisterAZero>({.num_warps = 4, .num_stages = 2});
    CHECK(count(g.source, "= A·B: the first wgmma has scale-d = 0") == 2);
    CHECK(std::regex_search(g.source, std::regex(R"(\{%32, %33, %34, %35\}, %36, 0, 1, 1, 1; \})")));
    testing::compiles_for_sm90a(g.source, "zero_acc_register_a.cu");
  }
  const auto dev = tj::Device::interpreter();
  zero_acc_cases_match(dev);
}

TEST_CASE("resident_edges_loops_that_may_not_run_and_a_read_after") {
  const auto g = gen<ResidentTwoLoops>({.num_warps = 4, .num_stages = 2});
  const std::string& src = g.source;
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(tj_mbar_wait\(tj_rbar(\d+), 0u\);  // block %\d+ has landed \(once, before loop)")));
  const std::string q = m[1];
  const std::size_t wait = static_cast<std::size_t>(m.position(0));
  // Q's one wait of every thread stands before the first loop, at the top level: no other wait than thread 0's at
  // exit, and no read of Q before it.
  REQUIRE(std::regex_search(src, m, std::regex(R"(for \(int s\d+ = )")));
  CHECK(static_cast<std::size_t>(m.position(0)) > wait);
  CHECK(src.find("tj_wgmma_desc((tj_res" + q + " +") > wait);
  CHECK(count(src, "tj_mbar_wait(tj_rbar" + q + ", 0u);") == 2);
  CHECK(count(src, "if (tj_tid == 0) tj_mbar_wait(tj_rbar" + q + ", 0u);") == 1);
  CHECK(count(src, "= A·B: the first wgmma has scale-d = 0") == 2);  // the zero and the -0 accumulator
  testing::compiles_for_sm90a(src, "resident_edges.cu");
  for (const auto& [S, S2] : {std::pair{0, 128}, std::pair{128, 0}, std::pair{0, 0}, std::pair{192, 64}})
    resident_matches(tj::Device::interpreter(), S, S2);
}

TEST_CASE("resident_edges_cluster_of_two") {
  const auto g = gen<ClusterScores<128>>({.num_warps = 8, .num_stages = 2, .warp_specialize = true, .num_ctas = 2});
  const std::string& src = g.source;
  CHECK(testing::has_diagnostic(g, "clusters of 2 programs"));
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(tj_mbar_wait\(tj_rbar(\d+), 0u\);  // block %\d+ has landed \(once, before loop)")));
  CHECK(count(src, "tj_mbar_wait(tj_rbar" + m[1].str() + ", 0u);") == 2);
  testing::compiles_for_sm90a(src, "resident_edges_cluster.cu");
  cluster_matches(tj::Device::interpreter(), kCluster);
}

TEST_CASE("packed_zero_resident_edges_gpu_matches_reference") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  carried_matches<tj::f16>(dev, {.num_warps = 4, .num_stages = 2});
  carried_matches<bf>(dev, {.num_warps = 4, .num_stages = 2, .overlap_register_wgmma = false});
  for (const auto& [S, R] : {std::pair{128, 2}, std::pair{0, 2}, std::pair{192, 1}, std::pair{128, 0}}) nested_matches(dev, S, R);
  persistent_matches(dev, kWs8, 2);
  persistent_matches(dev, {.num_warps = 8, .num_stages = 2}, 2);  // not warp-specialised
  stored_matches(dev, {.num_warps = 4, .num_stages = 2, .tma_store = true});
  zero_acc_cases_match(dev);
  for (const auto& [S, S2] : {std::pair{0, 128}, std::pair{128, 0}, std::pair{0, 0}, std::pair{192, 64}}) resident_matches(dev, S, S2);
  cluster_matches(dev, kCluster);
}
