// tj::associative_scan of several tiles together (Triton's tl.associative_scan on a tuple). The operators:
//  - argmax so far: (value, index) pairs, f32 and i32 in one element; ties keep the earlier index, so an
//    operand order swapped anywhere shows, and values are drawn from a few levels so ties are common;
//  - segmented sum: (flag, value) with an i8 flag (a narrow register in the tuple) — the classic non-commutative
//    scan; each flag starts a segment;
//  - three operands (i64 sum, i32 count of positives, f32 max), an 8-byte field beside 4-byte ones;
//  - the linear recurrence h[t] = a[t]·h[t-1] + b[t] of state-space models, in f32 (a tolerance: products round).
// tj::reduce of several tiles: argmax with ties toward the lower index, the three-operand one, and Welford's
// (count, mean, m2) in f32 (a tolerance).
// Checked on the interpreter, the generated HIP text on the host emulator (wave32, wave64) and the GPU, against a
// sequential CPU reference on fresh random inputs, in 1-D and 2-D along both axes, reversed, with 96-wide tiles and
// 12 warps (radix-3 digits in registers and warps); the code compiles for sm_90a, sm_80 and gfx942. Outputs are
// poisoned before each run (test/common/runners.hpp), so an element not written fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

enum class Op { argmax, segsum, three, recurrence };

template <Op O>
using elem_t = std::conditional_t<O == Op::argmax || O == Op::recurrence, float, std::int32_t>;

/// The element index tile of an [M, N] tile (M = 1: a 1-D tile of N).
template <int M, int N>
auto index_tile() {
  if constexpr (M == 1) return tj::arange<N>();
  else return tj::expand_dims<1>(tj::arange<M>()) * N + tj::expand_dims<0>(tj::arange<N>());
}

/// y = the scan of the operands read from x, each output in its own stretch of y (P stretches of M·N).
/// argmax (float x, y): operand x[0:MN]; y[0:MN] the max so far, y[MN:2MN] its index (as float, exact).
/// segsum (i32): flags x[0:MN] (as i8), values x[MN:2MN]; y[0:MN] the segment's sum so far, y[MN:2MN] the flag scan.
/// three (i32): x[0:MN]; y = sum (i64, stored as i32: small), count of positives, max (f32, stored as i32).
/// recurrence (float): a x[0:MN], b x[MN:2MN]; y[0:MN] the product of a so far, y[MN:2MN] h.
template <Op O, int M, int N, int Axis, bool Rev>
struct TupleScan {
  static constexpr int MN = M * N, Ax = M == 1 ? 0 : Axis;
  using T = elem_t<O>;
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto o = index_tile<M, N>();
    if constexpr (O == Op::argmax) {
      auto [v, i] = tj::associative_scan<Ax, Rev>(std::tuple{tj::load(x + o), o}, [](auto l, auto r) {
        auto [v1, i1] = l;
        auto [v2, i2] = r;
        // l is the element of the lower index (reversed too): kept unless r is strictly greater
        return std::tuple{tj::where(v2 > v1, v2, v1), tj::where(v2 > v1, i2, i1)};
      });
      tj::store(y + o, v);
      tj::store(y + MN + o, tj::cast<T>(i));
    } else if constexpr (O == Op::segsum) {
      auto flag = tj::cast<std::int8_t>(tj::load(x + o));
      auto [s, f] = tj::associative_scan<Ax, Rev>(std::tuple{tj::load(x + MN + o), flag}, [](auto l, auto r) {
        auto [s1, f1] = l;
        auto [s2, f2] = r;
        return std::tuple{tj::where(f2 != 0, s2, s1 + s2), tj::cast<std::int8_t>(f1 | f2)};
      });
      tj::store(y + o, s);
      tj::store(y + MN + o, tj::cast<T>(f));
    } else if constexpr (O == Op::three) {
      auto v = tj::load(x + o);
      auto pos = tj::cast<std::int32_t>(v > 0);
      auto [s, c, m] = tj::associative_scan<Ax, Rev>(std::tuple{tj::cast<std::int64_t>(v), pos, tj::cast<float>(v)}, [](auto l, auto r) {
        auto [s1, c1, m1] = l;
        auto [s2, c2, m2] = r;
        return std::tuple{s1 + s2, c1 + c2, tj::maximum(m1, m2)};
      });
      tj::store(y + o, tj::cast<T>(s));
      tj::store(y + MN + o, c);
      tj::store(y + 2 * MN + o, tj::cast<T>(m));
    } else {
      auto [p, h] = tj::associative_scan<Ax, Rev>(std::tuple{tj::load(x + o), tj::load(x + MN + o)}, [](auto l, auto r) {
        auto [a1, b1] = l;
        auto [a2, b2] = r;
        return std::tuple{a1 * a2, a2 * b1 + b2};
      });
      tj::store(y + o, p);
      tj::store(y + MN + o, h);
    }
  }
};

/// Fresh inputs for O over MN elements (the x buffer: P stretches).
template <Op O>
std::vector<elem_t<O>> inputs(int MN, unsigned salt) {
  const auto r = testing::random_floats(static_cast<std::size_t>(3 * MN), -1, 1, salt);
  std::vector<elem_t<O>> x(static_cast<std::size_t>(3 * MN));
  for (std::size_t e = 0; e < x.size(); ++e) {
    if constexpr (O == Op::argmax) x[e] = std::round(r[e] * 4) / 4;  // nine levels: ties are common
    else if constexpr (O == Op::recurrence) x[e] = e < static_cast<std::size_t>(MN) ? 0.5f + 0.5f * r[e] : r[e];  // a in (0, 1)
    else if constexpr (O == Op::segsum) x[e] = e < static_cast<std::size_t>(MN) ? (r[e] > 0.6f) : static_cast<std::int32_t>(std::lround(r[e] * 1000));
    else x[e] = static_cast<std::int32_t>(std::lround(r[e] * 1000));
  }
  return x;
}

/// The sequential reference, element by element along each line of the axis in the scan's order (reversed: from
/// the end, the operator's earlier operand being the element of the higher index).
template <Op O, int M, int N, int Axis, bool Rev>
std::vector<double> reference(const std::vector<elem_t<O>>& x) {
  constexpr int MN = M * N, P = O == Op::three ? 3 : 2;
  const int axis = M == 1 ? 1 : Axis, len = axis == 1 ? N : M, lines = axis == 1 ? M : N;
  std::vector<double> want(static_cast<std::size_t>(P * MN));
  for (int o = 0; o < lines; ++o) {
    std::array<double, 3> acc{};
    for (int jj = 0; jj < len; ++jj) {
      const int j = Rev ? len - 1 - jj : jj;
      const std::size_t e = static_cast<std::size_t>(axis == 1 ? o * N + j : j * N + o);
      auto at = [&](int stretch) { return static_cast<double>(x[e + static_cast<std::size_t>(stretch * MN)]); };
      std::array<double, 3> el{};
      if constexpr (O == Op::argmax) el = {at(0), static_cast<double>(e), 0};
      else if constexpr (O == Op::segsum) el = {at(1), at(0), 0};
      else if constexpr (O == Op::three) el = {at(0), at(0) > 0 ? 1.0 : 0.0, at(0)};
      else el = {at(0), at(1), 0};
      // combine(l, r) with l the earlier operand: in index order (Rev: r is the element, l the running value
      // of the higher indices — the scan applies combine(x[j], acc))
      auto combine = [](const std::array<double, 3>& l, const std::array<double, 3>& r) -> std::array<double, 3> {
        if constexpr (O == Op::argmax) return r[0] > l[0] ? r : l;
        else if constexpr (O == Op::segsum) return {r[1] != 0 ? r[0] : l[0] + r[0], (l[1] != 0 || r[1] != 0) ? 1.0 : 0.0, 0};
        else if constexpr (O == Op::three) return {l[0] + r[0], l[1] + r[1], std::max(l[2], r[2])};
        else return {l[0] * r[0], r[0] * l[1] + r[1], 0};
      };
      acc = jj == 0 ? el : Rev ? combine(el, acc) : combine(acc, el);
      for (int k = 0; k < P; ++k) want[e + static_cast<std::size_t>(k * MN)] = acc[static_cast<std::size_t>(k)];
    }
  }
  return want;
}

template <Op O, int M, int N, int Axis, bool Rev, class Runner>
void check(const Runner& on, std::initializer_list<int> warps, unsigned salt) {
  constexpr int MN = M * N, P = O == Op::three ? 3 : 2;
  CAPTURE(static_cast<int>(O));
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(Axis);
  CAPTURE(Rev);
  CAPTURE(testing::fresh_seed());
  const auto x = inputs<O>(MN, salt);
  const auto want = reference<O, M, N, Axis, Rev>(x);
  for (int nw : warps) {
    CAPTURE(nw);
    const auto y = on.template run<TupleScan<O, M, N, Axis, Rev>>(x, nw);
    if (y.empty()) return;  // (no host clang)
    int wrong = 0;
    for (std::size_t e = 0; e < static_cast<std::size_t>(P * MN); ++e) {
      const double got = static_cast<double>(y[e]);
      // The recurrence rounds in f32, grouped otherwise than the reference's f64: within 1e-5 of the value's
      // scale; everything else is exact.
      const bool ok = O == Op::recurrence ? std::abs(got - want[e]) <= 1e-5 * (1 + std::abs(want[e])) : got == want[e];
      if (!ok && wrong++ < 4) MESSAGE("element ", e, ": got ", got, ", want ", want[e]);
    }
    CHECK(wrong == 0);
  }
}

template <class Runner>
void check_all(const Runner& on, unsigned salt) {
  check<Op::argmax, 1, 96, 0, false>(on, {1}, salt + 1);        // 96 = 32·3: a radix-3 register digit
  check<Op::argmax, 1, 384, 0, true>(on, {4, 12}, salt + 2);   // across warps, 12 = 4·3
  check<Op::argmax, 96, 16, 0, false>(on, {12}, salt + 3);     // along the dim the warps split
  check<Op::segsum, 1, 1024, 0, false>(on, {4, 8}, salt + 4);
  check<Op::segsum, 16, 96, 1, true>(on, {4}, salt + 5);
  check<Op::segsum, 64, 32, 0, true>(on, {4, 8}, salt + 6);
  check<Op::three, 1, 256, 0, false>(on, {4}, salt + 7);
  check<Op::three, 96, 16, 0, true>(on, {4, 12}, salt + 8);
  check<Op::recurrence, 1, 512, 0, false>(on, {1, 4}, salt + 9);
  check<Op::recurrence, 32, 96, 1, false>(on, {4}, salt + 10);
  check<Op::recurrence, 1, 96, 0, true>(on, {1}, salt + 11);
}

enum class Red { argmax, argmax_fresh, three, welford };

template <Red O>
using red_elem_t = std::conditional_t<O == Red::three, std::int32_t, float>;

/// y = tj::reduce of several tiles read from x[0:MN] along Axis, each result in its own stretch of `lines`:
/// argmax: (value, index), ties toward the lower index (commutative); argmax_fresh: the same with the index tile
/// built again (its own nodes, so its layout need not be the values' — the reduction converts it); three: (i64 sum, i32 count of positives,
/// f32 max); welford: (count, mean, m2) merged by Chan et al.'s formula, y = mean and m2 / count.
template <Red O, int M, int N, int Axis>
struct TupleReduce {
  static constexpr int MN = M * N, Ax = M == 1 ? 0 : Axis, lines = M == 1 ? 1 : Axis == 1 ? M : N;
  using T = red_elem_t<O>;
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto o = index_tile<M, N>();
    auto v = tj::load(x + o);
    auto out = [&](int stretch, auto value) {
      if constexpr (M == 1) tj::store(y + stretch * lines, value);
      else tj::store(y + stretch * lines + tj::arange<lines>(), value);
    };
    if constexpr (O == Red::argmax || O == Red::argmax_fresh) {
      auto index = [&] {
        if constexpr (O == Red::argmax) return o;
        else return index_tile<M, N>();
      }();
      auto [m, i] = tj::reduce<Ax>(std::tuple{v, index}, [](auto l, auto r) {
        auto [v1, i1] = l;
        auto [v2, i2] = r;
        auto right = (v2 > v1) | ((v2 == v1) & (i2 < i1));
        return std::tuple{tj::where(right, v2, v1), tj::where(right, i2, i1)};
      });
      out(0, m);
      out(1, tj::cast<T>(i));
    } else if constexpr (O == Red::three) {
      auto [s, c, m] = tj::reduce<Ax>(std::tuple{tj::cast<std::int64_t>(v), tj::cast<std::int32_t>(v > 0), tj::cast<float>(v)},
                                      [](auto l, auto r) {
                                        auto [s1, c1, m1] = l;
                                        auto [s2, c2, m2] = r;
                                        return std::tuple{s1 + s2, c1 + c2, tj::maximum(m1, m2)};
                                      });
      out(0, tj::cast<T>(s));
      out(1, c);
      out(2, tj::cast<T>(m));
    } else {
      auto [n, mean, m2] = tj::reduce<Ax>(std::tuple{v * 0.0f + 1.0f, v, v * 0.0f}, [](auto l, auto r) {
        auto [na, ma, qa] = l;
        auto [nb, mb, qb] = r;
        auto nn = na + nb;
        auto d = mb - ma;
        return std::tuple{nn, ma + d * nb / nn, qa + qb + d * d * na * nb / nn};
      });
      out(0, mean);
      out(1, m2 / n);
    }
  }
};

template <Red O, int M, int N, int Axis, class Runner>
void check_reduce(const Runner& on, std::initializer_list<int> warps, unsigned salt) {
  using T = red_elem_t<O>;
  constexpr int MN = M * N, lines = TupleReduce<O, M, N, Axis>::lines, P = O == Red::three ? 3 : 2;
  CAPTURE(static_cast<int>(O));
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(Axis);
  CAPTURE(testing::fresh_seed());
  const auto r = testing::random_floats(static_cast<std::size_t>(MN), -1, 1, salt);
  std::vector<T> x(static_cast<std::size_t>(MN));
  for (std::size_t e = 0; e < x.size(); ++e) {
    if constexpr (O == Red::argmax || O == Red::argmax_fresh) x[e] = std::round(r[e] * 4) / 4;  // ties are common
    else if constexpr (O == Red::welford) x[e] = 3 + r[e];            // a mean far from 0: the naive formula would cancel
    else x[e] = static_cast<T>(std::lround(r[e] * 1000));
  }
  const int axis = M == 1 ? 1 : Axis, len = axis == 1 ? N : M;
  std::vector<double> want(static_cast<std::size_t>(P * lines));
  for (int o = 0; o < lines; ++o) {
    auto at = [&](int j) { return static_cast<std::size_t>(axis == 1 ? o * N + j : j * N + o); };
    if constexpr (O == Red::argmax || O == Red::argmax_fresh) {
      std::size_t best = at(0);
      for (int j = 1; j < len; ++j)
        if (x[at(j)] > x[best]) best = at(j);  // the first maximum in index order: the lowest index
      want[static_cast<std::size_t>(o)] = x[best];
      want[static_cast<std::size_t>(lines + o)] = static_cast<double>(best);
    } else if constexpr (O == Red::three) {
      double s = 0, c = 0, m = -1e300;
      for (int j = 0; j < len; ++j) s += x[at(j)], c += x[at(j)] > 0, m = std::max(m, static_cast<double>(x[at(j)]));
      want[static_cast<std::size_t>(o)] = s;
      want[static_cast<std::size_t>(lines + o)] = c;
      want[static_cast<std::size_t>(2 * lines + o)] = m;
    } else {
      double s = 0, q = 0;
      for (int j = 0; j < len; ++j) s += x[at(j)];
      s /= len;
      for (int j = 0; j < len; ++j) q += (x[at(j)] - s) * (x[at(j)] - s);
      want[static_cast<std::size_t>(o)] = s;
      want[static_cast<std::size_t>(lines + o)] = q / len;
    }
  }
  for (int nw : warps) {
    CAPTURE(nw);
    auto y = on.template run<TupleReduce<O, M, N, Axis>>(x, nw);
    if (y.empty()) return;
    int wrong = 0;
    for (std::size_t e = 0; e < want.size(); ++e) {
      const double got = static_cast<double>(y[e]);
      // Welford in f32 on values near 3 with variance 1/3: within 1e-5 (mean) / 2e-5 (variance) of the f64 value.
      const bool ok = O == Red::welford ? std::abs(got - want[e]) <= 2e-5 : got == want[e];
      if (!ok && wrong++ < 4) MESSAGE("element ", e, ": got ", got, ", want ", want[e]);
    }
    CHECK(wrong == 0);
  }
}

template <class Runner>
void check_reduce_all(const Runner& on, unsigned salt) {
  check_reduce<Red::argmax, 1, 384, 0>(on, {4, 12}, salt + 1);  // to scalars, across warps of a radix-3 digit
  check_reduce<Red::argmax, 16, 96, 1>(on, {4}, salt + 2);
  check_reduce<Red::argmax, 96, 16, 0>(on, {12}, salt + 3);
  check_reduce<Red::three, 64, 32, 0>(on, {4, 8}, salt + 4);
  check_reduce<Red::three, 1, 1024, 0>(on, {8}, salt + 5);
  check_reduce<Red::welford, 16, 96, 1>(on, {4}, salt + 6);
  check_reduce<Red::welford, 1, 768, 0>(on, {12}, salt + 7);
  check_reduce<Red::argmax_fresh, 1, 256, 0>(on, {4}, salt + 8);   // the index in another layout than the values
  check_reduce<Red::argmax_fresh, 32, 64, 1>(on, {4, 8}, salt + 9);
  check_reduce<Red::three, 48, 96, 0>(on, {16}, salt + 10);         // 16 warps: the partials pass in chunks
}

}  // namespace

TEST_CASE("tuple_scan_interpreter_matches_cpu") {
  check_all(testing::OnDevice{tj::Device::interpreter()}, 1100);
  check_reduce_all(testing::OnDevice{tj::Device::interpreter()}, 1150);
}

TEST_CASE("tuple_scan_generated_code_runs_on_the_host_emulator") {
  check_all(testing::OnHost{"gfx1100"}, 1200);
  check_all(testing::OnHost{"gfx942"}, 1300);
  check_reduce_all(testing::OnHost{"gfx1100"}, 1250);
  check_reduce_all(testing::OnHost{"gfx942"}, 1350);
}

TEST_CASE("tuple_scan_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_all(testing::OnDevice{dev}, 1400);
  check_reduce_all(testing::OnDevice{dev}, 1450);
}

TEST_CASE("tuple_scan_compiles_everywhere") {
  auto all = [](const tj::ir::Kernel& k, int nw) {
    for (const char* arch : {"sm_90a", "sm_80"}) {
      const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw});
      CHECK(g.source.find("struct tj_tup0") != std::string::npos);
      testing::compiles_for(g.source, arch, k.name);
    }
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
  };
  all(tj::trace(TupleScan<Op::argmax, 1, 384, 0, true>{}), 12);
  all(tj::trace(TupleScan<Op::segsum, 16, 96, 1, true>{}), 4);
  all(tj::trace(TupleScan<Op::three, 96, 16, 0, false>{}), 12);
  all(tj::trace(TupleScan<Op::recurrence, 1, 512, 0, false>{}), 4);
  all(tj::trace(TupleReduce<Red::argmax, 1, 384, 0>{}), 12);
  all(tj::trace(TupleReduce<Red::three, 64, 32, 0>{}), 8);
  all(tj::trace(TupleReduce<Red::welford, 16, 96, 1>{}), 4);
}

TEST_CASE("tuple_scan_ir_and_its_rules") {
  struct Rec {
    void operator()(tj::Ptr<float> a, tj::Ptr<float> b, tj::Ptr<float> h) const {
      auto o = tj::arange<64>();
      auto [p, hh] = tj::associative_scan<0>(std::tuple{tj::load(a + o), tj::load(b + o)}, [](auto l, auto r) {
        auto [a1, b1] = l;
        auto [a2, b2] = r;
        return std::tuple{a1 * a2, a2 * b1 + b2};
      });
      tj::store(h + o, hh);
      (void)p;
    }
  };
  auto k = tj::trace(Rec{});
  REQUIRE(k.combines.size() == 1);
  CHECK(k.combines[0].arity() == 2);
  const std::string p = tj::ir::print(k);
  CHECK(p.find("scan_custom f32[64]") != std::string::npos);
  CHECK(p.find("combine=0 (value 0 of f32, f32)") != std::string::npos);
  CHECK(p.find("tuple_get f32[64]") != std::string::npos);
  CHECK(p.find("combine_arg f32 #3") != std::string::npos);
  tj::ir::verify(k);
  // The IR's rules: a tuple_get past the scan's arity, or of another node, is refused.
  int get = -1;
  for (std::size_t id = 0; id < k.nodes.size(); ++id)
    if (k.nodes[id].op == tj::ir::Op::tuple_get) get = static_cast<int>(id);
  REQUIRE(get >= 0);
  auto bad = k;
  bad.nodes[static_cast<std::size_t>(get)].i = 2;
  CHECK_THROWS_WITH_AS(tj::ir::verify(bad), doctest::Contains("not a custom scan or reduction of that many operands"), tj::Unsupported);
  bad = k;
  bad.combines[0].results.pop_back();  // a combine of arity 1 whose scan names a second operand... and a tuple_get
  CHECK_THROWS_AS(tj::ir::verify(bad), tj::Unsupported);
  bad = k;
  bad.combines[0].nodes[2].type.dtype = tj::DType::i32;  // operand 0 of the later element is f32
  CHECK_THROWS_WITH_AS(tj::ir::verify(bad), doctest::Contains("is not combine_arg #2 of f32"), tj::Unsupported);
  // A combine reading a value from outside it is refused as a one-operand one is.
  struct Captures {
    void operator()(tj::Ptr<float> a, tj::Ptr<float> h, tj::Scalar<float> s) const {
      auto o = tj::arange<32>();
      auto v = tj::load(a + o);
      auto [x, y] = tj::associative_scan<0>(std::tuple{v, v}, [&](auto l, auto r) {
        auto [a1, b1] = l;
        auto [a2, b2] = r;
        return std::tuple{a1 + a2, (b1 + b2) * s};
      });
      tj::store(h + o, x + y);
    }
  };
  CHECK_THROWS_WITH_AS(tj::trace(Captures{}), doctest::Contains("reads kernel argument arg2"), tj::InvalidArgument);
}

TEST_CASE("tuple_reductions_across_warps_use_bounded_shared_memory") {
  // A review found (f32, i32) over [48, 96] with 16 warps refused on gfx942 for 96 KiB (a slot per register, thread
  // and operand): the partials now pass through shared memory in chunks, for one operand as for several. Here
  // (i64, i32, f32) along axis 0 over 16 warps: 36 KiB unchunked on sm_80, one 24-byte slot per thread now (as
  // many as fit in 16 KiB).
  struct Three {
    void operator()(tj::Ptr<std::int32_t> x, tj::Ptr<std::int32_t> y) const {
      auto v = tj::load(x + index_tile<48, 96>());
      auto [s, c, m] = tj::reduce<0>(std::tuple{tj::cast<std::int64_t>(v), tj::cast<std::int32_t>(v > 0), tj::cast<float>(v)},
                                     [](auto l, auto r) {
                                       auto [s1, c1, m1] = l;
                                       auto [s2, c2, m2] = r;
                                       return std::tuple{s1 + s2, c1 + c2, tj::maximum(m1, m2)};
                                     });
      tj::store(y + tj::arange<96>(), tj::cast<std::int32_t>(s) + c + tj::cast<std::int32_t>(m));
    }
  };
  for (std::string arch : {"sm_80", "sm_90a", "gfx942"}) {
    CAPTURE(arch);
    const auto g = tj::codegen::generate(tj::trace(Three{}), {}, tj::codegen::target_for(arch), {.num_warps = 16});
    const int slot = 16 * (arch == "gfx942" ? 64 : 32) * 24;  // one element per thread: 12 KiB, 24 KiB on wave64
    CHECK(g.shared_bytes == std::max(slot, 16384 / slot * slot));
  }
}
