// tj::reshape, tj::join, tj::split and tj::interleave: the elements in row-major order in another shape, checked
// on the interpreter, on the HIP text generated for wave32 and wave64 run on the CPU (host emulator), through
// NVRTC (sm_90a, sm_80) and hiprtc (gfx942), and on the GPU. Each kernel writes every element of its output from
// its input, plus its row and column in the output's shape, so an element that lands in the wrong place shows.
// The layout planner either regroups one side's layout so that every thread keeps its registers, or — when the
// digit order forbids it (96 = [2,...,2,3] read as [32, 3]) or other uses fix both layouts — the code generator
// moves the elements through shared memory; both ways are named in the diagnostics and both are run here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

/// Pointers to a row-major [R, C] block at p.
template <int R, int C, class P>
auto grid2(const P& p) {
  return p + tj::expand_dims<1>(tj::arange<R>()) * C + tj::expand_dims<0>(tj::arange<C>());
}
/// 16-bit floats are not tagged (the sums would round); their elements still land where they belong or not.
template <class T> inline constexpr bool kTags = !std::is_same_v<T, tj::bf16> && !std::is_same_v<T, tj::f16>;
/// v [R, C] plus 1000·row + column, computed in the result's shape: an element whose coordinates are wrong shows.
template <int R, int C, class V>
auto tagged(const V& v) {
  using E = tj::lang::elem_t<V>;
  if constexpr (kTags<E>) {
    auto rc = tj::expand_dims<1>(tj::arange<R>()) * 1000 + tj::expand_dims<0>(tj::arange<C>());
    return v + tj::cast<E>(rc);
  } else {
    return v;
  }
}
/// x as a double (16-bit floats through float).
template <class T>
double dbl(T x) {
  if constexpr (kTags<T>) return static_cast<double>(x);
  else return static_cast<double>(static_cast<float>(x));
}
/// The reference of tagged<R, C> applied to x read as [R, C].
template <class T>
std::vector<T> tagged_ref(const std::vector<T>& x, int R, int C) {
  std::vector<T> y(x.size());
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const auto i = static_cast<std::size_t>(r * C + c);
      y[i] = kTags<T> ? static_cast<T>(dbl(x[i]) + (r * 1000 + c)) : x[i];
    }
  return y;
}

/// [96] -> [A, B]: the 1-D operand is free to take the result's layout, flattened (no data moves).
template <class T, int A, int B>
struct OneToTwo {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto v = tj::reshape<A, B>(tj::load(x + tj::arange<A * B>()));
    tj::store(grid2<A, B>(y), tagged<A, B>(v));
  }
};
/// [A, B] -> [A·B]: the result takes the operand's layout, flattened.
template <class T, int A, int B>
struct TwoToOne {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto v = tj::reshape<A * B>(tj::load(grid2<A, B>(x)));
    if constexpr (kTags<T>) tj::store(y + tj::arange<A * B>(), v + tj::cast<T>(tj::arange<A * B>()));
    else tj::store(y + tj::arange<A * B>(), v);
  }
};
/// [A, B] -> [C, D]: regrouped when the operand's digits split as [C, D] needs, else through shared memory.
template <class T, int A, int B, int C, int D>
struct TwoToTwo {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto v = tj::reshape<C, D>(tagged<A, B>(tj::load(grid2<A, B>(x))));
    tj::store(grid2<C, D>(y), tagged<C, D>(v));
  }
};
/// A 1-D operand whose layout another use fixes (a row sum makes it a slice of the [96, 4] tile's layout: row i at
/// lane i % 32, register i / 32) before it is reshaped: as [3, 32] every thread still holds its elements (the
/// blocked [3, 32] layout puts element (r, c) at lane c, register r), as [32, 3] they move through shared memory.
template <class T, int A, int B>
struct Pinned {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto w = tj::load(x + tj::expand_dims<1>(tj::arange<96>()) + tj::expand_dims<0>(tj::arange<4>()) * 0);  // [96, 4]
    auto v = tj::sum<1>(w);                                                                               // [96]: 4 x[i]
    tj::store(grid2<A, B>(y), tagged<A, B>(tj::reshape<A, B>(v)));
  }
};
/// Pointers reshaped, then loaded through.
template <class T, int A = 8, int B = 12>
struct Pointers {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto p = tj::reshape<A, B>(x + tj::arange<A * B>());
    tj::store(grid2<A, B>(y), tagged<A, B>(tj::load(p)));
  }
};
/// A reshape inside a loop, of a loop-carried value: acc [3, 32] += x[96 i, 96 i + 96) read as [3, 32], then the
/// carry read back as [96] and as [32, 3] (through shared memory) each iteration.
template <class T>
struct InLoop {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto init = std::tuple{tj::zeros<T, 3, 32>(), tj::zeros<T, 32, 3>()};
    auto [acc, back] = tj::for_range(0, 3, 1, init, [&](tj::Int i, auto acc, auto back) {
      auto next = acc + tj::reshape<3, 32>(tj::load(x + i * 32 + tj::arange<96>()));
      return std::tuple{next, back + tj::reshape<32, 3>(tj::reshape<96>(next))};
    });
    tj::store(grid2<3, 32>(y), acc);
    tj::store(grid2<32, 3>(y + 96), back);
  }
};
/// A reshaped tile as a dot operand: a [16, 16] block read as [256], its elements reshaped back, times b.
struct DotOperand {
  void operator()(tj::Ptr<tj::f16> x, tj::Ptr<float> y) const {
    auto a = tj::reshape<16, 16>(tj::load(x + tj::arange<256>()));
    auto b = tj::load(grid2<16, 16>(x + 256));
    tj::store(grid2<16, 16>(y), tj::dot(a, b, tj::zeros<float, 16, 16>()));
  }
};
/// f8 tiles (held decoded in f32 registers): [3, 32] as [32, 3] through shared memory, [96] as [3, 32] in registers.
template <class T>
struct F8 {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    tj::store(grid2<32, 3>(y), tj::reshape<32, 3>(tj::load(grid2<3, 32>(x))));
    tj::store(grid2<3, 32>(y + 96), tj::reshape<3, 32>(tj::load(x + 96 + tj::arange<96>())));
  }
};
/// One arange for two reshapes into different layouts (Triton style): the second reshape's operand chain (arange,
/// addptr) is recomputed in its layout (ir::rematerialize) instead of crossing shared memory. y = x, 192 elements.
template <class T>
struct SharedArange {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto i = tj::arange<96>();
    tj::store(tj::reshape<6, 16>(y + i), tj::load(tj::reshape<6, 16>(x + i)));
    tj::store(tj::reshape<16, 6>(y + 96 + i), tj::load(tj::reshape<16, 6>(x + 96 + i)));
  }
};
/// A fallback too big for static shared memory: [96, 128] f64 as [128, 96] (98304 bytes).
struct TooBig {
  void operator()(tj::Ptr<double> x, tj::Ptr<double> y) const {
    tj::store(grid2<128, 96>(y), tj::reshape<128, 96>(tj::load(grid2<96, 128>(x))));
  }
};
/// join, interleave and split of x's halves: y[2i] = a[i] and y[2i + 1] = b[i] twice (join, interleave),
/// then split of that [48, 2] tile back.
template <class T>
struct JoinSplit {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto a = tj::load(x + tj::arange<48>());
    auto b = tj::load(x + 48 + tj::arange<48>());
    tj::store(grid2<48, 2>(y), tj::join(a, b));                     // y[0, 96)
    tj::store(y + 96 + tj::arange<96>(), tj::interleave(a, b));     // y[96, 192)
    auto [lo, hi] = tj::split(tj::load(grid2<48, 2>(x + 192)));      // x[192, 288) as [48, 2]
    tj::store(y + 192 + tj::arange<48>(), lo);                      // y[192, 240): the even elements
    tj::store(y + 240 + tj::arange<48>(), hi);                      // y[240, 288): the odd ones
    auto [s0, s1] = tj::split(tj::join(tj::load(x + 288), tj::load(x + 289)));  // scalars: [2] and back
    tj::store(y + 288, s1);
    tj::store(y + 289, s0);
  }
};
/// Bool tiles: join and split of masks (x > 0 and x < 0), stored as 0 / 1.
struct BoolSplit {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto v = tj::load(x + tj::arange<48>());
    auto [p, n] = tj::split(tj::join(v > 0.0f, v < 0.0f));
    tj::store(y + tj::arange<48>(), tj::cast<float>(p));
    tj::store(y + 48 + tj::arange<48>(), tj::cast<float>(n));
  }
};

template <class T>
std::vector<T> inputs(std::size_t n, unsigned salt) {
  std::vector<T> x;
  for (float f : testing::random_floats(n, -8, 8, salt)) {
    if constexpr (std::is_floating_point_v<T>) x.push_back(static_cast<T>(f));
    else if constexpr (std::is_integral_v<T>) x.push_back(static_cast<T>(std::lround(f * 100)));
    else x.push_back(T(std::round(f * 4) / 4));  // f16 / bf16: quarters, exact with the tags added
  }
  return x;
}

template <class T>
std::vector<T> poisoned(std::size_t n) {
  if constexpr (std::is_integral_v<T>) return std::vector<T>(n, std::numeric_limits<T>::min());
  else return std::vector<T>(n, T(NAN));
}

/// y = K(x) by `run` (a runner below) at 1 and 4 warps, against `ref`, elementwise and bitwise for floats.
template <class K, class T, class Run>
void expect(const Run& run, const std::vector<T>& x, const std::vector<T>& ref, std::size_t n_out) {
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    std::vector<T> y = poisoned<T>(n_out);
    if (!run.template operator()<K>(x, y, nw)) return;
    REQUIRE(y.size() == ref.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      CAPTURE(i);
      CHECK(std::memcmp(&y[i], &ref[i], sizeof(T)) == 0);
    }
  }
}

template <class T>
std::vector<T> join_split_ref(const std::vector<T>& x) {
  std::vector<T> y(290);
  for (int i = 0; i < 48; ++i) {
    y[static_cast<std::size_t>(2 * i)] = y[static_cast<std::size_t>(96 + 2 * i)] = x[static_cast<std::size_t>(i)];
    y[static_cast<std::size_t>(2 * i + 1)] = y[static_cast<std::size_t>(96 + 2 * i + 1)] = x[static_cast<std::size_t>(48 + i)];
    y[static_cast<std::size_t>(192 + i)] = x[static_cast<std::size_t>(192 + 2 * i)];
    y[static_cast<std::size_t>(240 + i)] = x[static_cast<std::size_t>(192 + 2 * i + 1)];
  }
  y[288] = x[289];
  y[289] = x[288];
  return y;
}

/// Every kernel above against its reference through `run`.
template <class T, class Run>
void check_all(const Run& run, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  const auto x = inputs<T>(96, salt);
  {
    INFO("[96] -> [3, 32] and [32, 3]");
    expect<OneToTwo<T, 3, 32>>(run, x, tagged_ref(x, 3, 32), 96);
    expect<OneToTwo<T, 32, 3>>(run, x, tagged_ref(x, 32, 3), 96);
    expect<OneToTwo<T, 12, 8>>(run, x, tagged_ref(x, 12, 8), 96);
    expect<OneToTwo<T, 1, 96>>(run, x, tagged_ref(x, 1, 96), 96);  // size-1 dims: through shared memory
    expect<OneToTwo<T, 96, 1>>(run, x, tagged_ref(x, 96, 1), 96);
  }
  {
    INFO("[A, B] -> [96]");
    std::vector<T> ref(96);
    for (int i = 0; i < 96; ++i)
      ref[static_cast<std::size_t>(i)] = kTags<T> ? static_cast<T>(dbl(x[static_cast<std::size_t>(i)]) + i) : x[static_cast<std::size_t>(i)];
    expect<TwoToOne<T, 3, 32>>(run, x, ref, 96);
    expect<TwoToOne<T, 32, 3>>(run, x, ref, 96);
    expect<TwoToOne<T, 8, 12>>(run, x, ref, 96);
    expect<TwoToOne<T, 96, 1>>(run, x, ref, 96);
  }
  {
    INFO("[A, B] -> [C, D]");
    auto both = [&](int a, int b, int c, int d) { return tagged_ref(tagged_ref(x, a, b), c, d); };
    expect<TwoToTwo<T, 3, 32, 32, 3>>(run, x, both(3, 32, 32, 3), 96);
    expect<TwoToTwo<T, 32, 3, 3, 32>>(run, x, both(32, 3, 3, 32), 96);
    expect<TwoToTwo<T, 4, 24, 8, 12>>(run, x, both(4, 24, 8, 12), 96);
    expect<TwoToTwo<T, 8, 12, 2, 48>>(run, x, both(8, 12, 2, 48), 96);
    expect<TwoToTwo<T, 6, 16, 16, 6>>(run, x, both(6, 16, 16, 6), 96);
    expect<TwoToTwo<T, 8, 12, 32, 3>>(run, x, both(8, 12, 32, 3), 96);
    expect<TwoToTwo<T, 4, 24, 4, 24>>(run, x, both(4, 24, 4, 24), 96);  // the same shape: no node
  }
  {
    INFO("a 1-D operand of fixed layout; pointers");
    std::vector<T> four(96);
    for (int i = 0; i < 96; ++i) four[static_cast<std::size_t>(i)] = T(static_cast<float>(4 * dbl(x[static_cast<std::size_t>(i)])));
    expect<Pinned<T, 3, 32>>(run, x, tagged_ref(four, 3, 32), 96);
    expect<Pinned<T, 32, 3>>(run, x, tagged_ref(four, 32, 3), 96);
    expect<Pointers<T>>(run, x, tagged_ref(x, 8, 12), 96);
  }
}

/// F8<T>: every byte of y equals x's (finite codes of both signs).
template <class T, class Run>
void check_f8(const Run& run, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  std::vector<T> x(192);
  std::mt19937 g(testing::fresh_seed() + salt);
  for (T& v : x) {
    v.bits = static_cast<std::uint8_t>(g() & 0xb7);  // exponent's top bit clear: finite (no NaN or Inf code)
    if ((v.bits & 0x7f) == 0) v.bits |= 0x11;
  }
  expect<F8<T>>(run, x, x, 192);
}

template <class T, class Run>
void check_loop(const Run& run, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  auto x = inputs<T>(160, salt);  // iterations read x[0, 96), [32, 128), [64, 160)
  if constexpr (std::is_floating_point_v<T>)
    for (T& v : x) v = std::round(v * 4) / 4;  // quarters: every sum exact, in any order
  std::vector<T> ref(192);
  std::vector<double> acc(96, 0.0), back(96, 0.0);
  for (int i = 0; i < 3; ++i) {
    for (int e = 0; e < 96; ++e) acc[static_cast<std::size_t>(e)] += dbl(x[static_cast<std::size_t>(32 * i + e)]);
    for (int e = 0; e < 96; ++e) back[static_cast<std::size_t>(e)] += acc[static_cast<std::size_t>(e)];
  }
  for (int e = 0; e < 96; ++e) {
    ref[static_cast<std::size_t>(e)] = static_cast<T>(acc[static_cast<std::size_t>(e)]);
    ref[static_cast<std::size_t>(96 + e)] = static_cast<T>(back[static_cast<std::size_t>(e)]);
  }
  expect<InLoop<T>>(run, x, ref, 192);
}

template <class T, class Run>
void check_join_split(const Run& run, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  auto x = inputs<T>(290, salt);
  if constexpr (std::is_floating_point_v<T>) {  // split keeps every bit: -0 and a NaN payload come back as they were
    x[192] = -0.0f;
    std::uint32_t bits = 0x7fc01234u;
    std::memcpy(&x[195], &bits, sizeof bits);
    x[289] = -0.0f;
  }
  expect<JoinSplit<T>>(run, x, join_split_ref(x), 290);
}

struct OnDevice {
  const tj::Device& dev;
  template <class K, class T>
  bool operator()(const std::vector<T>& x0, std::vector<T>& y, int nw) const {
    std::vector<T> x = x0;
    testing::Mirror m{dev, {}};
    tj::compile<K>(dev, {.num_warps = nw}).launch(tj::Grid{1}, m.up(x), m.up(y));
    m.down();
    return true;
  }
};

struct OnHost {
  const char* arch;
  template <class K, class T>
  bool operator()(const std::vector<T>& x0, std::vector<T>& y, int nw) const {
    std::vector<T> x = x0;
    const auto hk = testing::HostKernel::compile(tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {.num_warps = nw}));
    if (!hk) return false;
    hk->launch({1, 1, 1}, x.data(), y.data());
    return true;
  }
};

template <class Run>
void check_bools(const Run& run) {
  const auto x = inputs<float>(96, 91);
  std::vector<float> ref(96);
  for (int i = 0; i < 48; ++i) {
    ref[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(i)] > 0 ? 1.0f : 0.0f;
    ref[static_cast<std::size_t>(48 + i)] = x[static_cast<std::size_t>(i)] < 0 ? 1.0f : 0.0f;
  }
  expect<BoolSplit>(run, x, ref, 96);
}

/// The generated kernel's diagnostics at `nw` warps for sm_90a.
template <class K>
tj::codegen::Generated generated(int nw = 4, const char* arch = "sm_90a") {
  return tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {.num_warps = nw});
}

}  // namespace

TEST_CASE("reshape_join_split_interpreter_match_cpu") {
  const OnDevice on{tj::Device::interpreter()};
  check_all<float>(on, 11);
  check_all<std::int32_t>(on, 12);
  check_all<tj::bf16>(on, 13);
  check_join_split<float>(on, 14);
  check_join_split<std::int32_t>(on, 15);
  check_bools(on);
  check_loop<std::int32_t>(on, 16);
  check_loop<float>(on, 17);
  check_f8<tj::f8e4m3>(on, 18);
  check_f8<tj::f8e5m2>(on, 19);
  const auto x = inputs<float>(192, 20);
  expect<SharedArange<float>>(on, x, x, 192);
}

/// DotOperand on `dev` against an f64 product.
void check_dot(const tj::Device& dev) {
  CAPTURE(testing::fresh_seed());
  std::vector<tj::f16> x;
  for (float f : testing::random_floats(512, -1, 1, 41)) x.push_back(tj::f16(f));
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    std::vector<float> y(256, NAN);
    testing::Mirror m{dev, {}};
    tj::compile<DotOperand>(dev, {.num_warps = nw}).launch(tj::Grid{1}, m.up(x), m.up(y));
    m.down();
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        double want = 0;
        for (int k = 0; k < 16; ++k)
          want += dbl(x[static_cast<std::size_t>(i * 16 + k)]) * dbl(x[static_cast<std::size_t>(256 + k * 16 + j)]);
        CHECK(y[static_cast<std::size_t>(i * 16 + j)] == doctest::Approx(want).epsilon(1e-5));
      }
  }
}

TEST_CASE("reshape_as_a_dot_operand_interpreter") { check_dot(tj::Device::interpreter()); }

TEST_CASE("reshape_join_split_generated_code_runs_on_the_host_emulator") {
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    check_all<float>(OnHost{arch}, 21);
    check_all<std::int32_t>(OnHost{arch}, 22);
    check_all<tj::f16>(OnHost{arch}, 23);
    check_join_split<float>(OnHost{arch}, 24);
    check_bools(OnHost{arch});
    check_loop<std::int32_t>(OnHost{arch}, 25);
    check_f8<tj::f8e4m3>(OnHost{arch}, 26);
    check_f8<tj::f8e5m2>(OnHost{arch}, 27);
    const auto x = inputs<std::int32_t>(192, 28);
    expect<SharedArange<std::int32_t>>(OnHost{arch}, x, x, 192);
  }
}

TEST_CASE("reshape_join_split_compile_everywhere") {
  auto all = [](const auto& k) {
    for (const char* arch : {"sm_90a", "sm_80"})
      testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 4}).source, arch, k.name);
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 4}).source, k.name);
  };
  all(tj::trace(OneToTwo<float, 32, 3>{}));
  all(tj::trace(TwoToTwo<tj::bf16, 3, 32, 32, 3>{}));
  all(tj::trace(TwoToTwo<float, 4, 24, 8, 12>{}));
  all(tj::trace(Pinned<tj::f16, 32, 3>{}));
  all(tj::trace(TwoToTwo<std::int8_t, 8, 16, 4, 32>{}));
  all(tj::trace(Pointers<float>{}));
  all(tj::trace(JoinSplit<float>{}));
  all(tj::trace(BoolSplit{}));
  all(tj::trace(InLoop<float>{}));
  all(tj::trace(DotOperand{}));
  all(tj::trace(F8<tj::f8e4m3>{}));
}

TEST_CASE("reshape_moves_nothing_where_the_digits_allow_and_says_when_it_falls_back") {
  SUBCASE("a 1-D operand takes the result's layout flattened: registers only, whatever the digit order") {
    for (int nw : {1, 4}) {
      CAPTURE(nw);
      for (const auto& g : {generated<OneToTwo<float, 3, 32>>(nw), generated<OneToTwo<float, 32, 3>>(nw),
                            generated<TwoToOne<float, 32, 3>>(nw), generated<Pointers<float>>(nw)}) {
        CHECK(testing::has_diagnostic(g, "in registers: every thread keeps its elements"));
        CHECK_FALSE(testing::has_diagnostic(g, "through shared memory"));
      }
    }
  }
  SUBCASE("a 2-D operand whose digits split as the new shape needs: the result takes its layout regrouped") {
    for (int nw : {1, 4}) {
      const auto g = generated<TwoToTwo<float, 8, 16, 4, 32>>(nw);
      CAPTURE(g.diagnostics);
      CHECK(testing::has_diagnostic(g, "regrouped as [4,32]"));
      CHECK(testing::has_diagnostic(g, "in registers: every thread keeps its elements"));
    }
  }
  SUBCASE("bench/rowwise_bench's BM_ReshapeCopy: [32, 96] as [96, 32] in registers, [96, 32] as [32, 96] not") {
    CHECK(testing::has_diagnostic(generated<TwoToTwo<float, 32, 96, 96, 32>>(), "in registers: every thread keeps its elements"));
    const auto g = generated<TwoToTwo<float, 96, 32, 32, 96>>();
    CAPTURE(g.diagnostics);
    CHECK(testing::has_diagnostic(g, "cannot be regrouped as [32,96]"));
    CHECK(testing::has_diagnostic(g, "through 12288 bytes of shared memory (fallback"));
  }
  SUBCASE("[3, 32] as [32, 3] needs a radix-3 minor digit: the planner says why, the elements go through shared memory") {
    for (const auto& g : {generated<TwoToTwo<float, 3, 32, 32, 3>>(), generated<TwoToTwo<float, 32, 3, 3, 32>>()}) {
      CAPTURE(g.diagnostics);
      CHECK(testing::has_diagnostic(g, "cannot be regrouped"));
      CHECK(testing::has_diagnostic(g, "it needs a different digit order"));
      CHECK(testing::has_diagnostic(g, "through 384 bytes of shared memory (fallback"));
    }
  }
  SUBCASE("a 1-D operand whose layout a reduction fixes: registers where its threads hold the elements, else shared memory") {
    CHECK(testing::has_diagnostic(generated<Pinned<float, 3, 32>>(), "in registers: every thread keeps its elements"));
    const auto g = generated<Pinned<tj::bf16, 32, 3>>();
    CHECK(testing::has_diagnostic(g, "through 192 bytes of shared memory (fallback"));
  }
}

TEST_CASE("reshape_of_one_arange_into_two_layouts_recomputes_the_index_chain") {
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    const auto g = generated<SharedArange<float>>(nw);
    CAPTURE(g.diagnostics);
    CHECK(testing::has_diagnostic(g, "remat: reshape"));
    CHECK_FALSE(testing::has_diagnostic(g, "bytes of shared memory (fallback"));
  }
}

TEST_CASE("reshape_fallback_past_static_shared_memory_is_named_in_the_error") {
  CHECK_THROWS_WITH_AS(generated<TooBig>(4), doctest::Contains("the largest: reshape %"), tj::Unsupported);
  CHECK_THROWS_WITH_AS(generated<TooBig>(4), doctest::Contains("[96,128] to [128,96], 98304 bytes"), tj::Unsupported);
}

/// Reshape chains: [8, 12] -> [96] -> [3, 32] -> [8, 12] (back where it started) and -> [32, 3].
struct Chain {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto v = tj::load(grid2<8, 12>(x));
    tj::store(grid2<8, 12>(y), tj::reshape<8, 12>(tj::reshape<3, 32>(tj::reshape<96>(v))) + 1.0f);
    tj::store(grid2<32, 3>(y + 96), tj::reshape<32, 3>(tj::reshape<3, 32>(tj::reshape<96>(v))));
  }
};

TEST_CASE("reshape_chains_fold_into_one_reshape_or_none") {
  // The round trip to [8, 12] folds away, and [8, 12] -> [32, 3] is one reshape of the load: the two reshapes each
  // chain starts with are traced but used by nothing, and the code generator emits one.
  const auto k = tj::trace(Chain{});
  int used = 0;
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    if (k.nodes[id].op != tj::ir::Op::reshape) continue;
    bool read = false;
    for (const auto& u : k.nodes)
      for (int a : u.args) read = read || a == static_cast<int>(id);
    used += read;
  }
  CHECK(used == 1);
  int emitted = 0;
  for (const auto& d : generated<Chain>().diagnostics) emitted += d.rfind("reshape %", 0) == 0 && d.find(" to [") != std::string::npos;
  CHECK(emitted == 1);
  auto x = inputs<float>(96, 51);
  std::vector<float> ref(192);
  for (int i = 0; i < 96; ++i) ref[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(i)] + 1.0f, ref[static_cast<std::size_t>(96 + i)] = x[static_cast<std::size_t>(i)];
  x.resize(192, 0.0f);
  expect<Chain>(OnDevice{tj::Device::interpreter()}, x, ref, 192);
  expect<Chain>(OnHost{"gfx942"}, x, ref, 192);
}

TEST_CASE("reshape_keeps_what_axis_analysis_knows_of_contiguity") {
  // x + arange<512> read as [16, 32]: rows of 32 contiguous elements, starting 128 bytes apart (x 16-byte aligned).
  const auto k = tj::trace(Pointers<float, 16, 32>{});
  tj::ir::Specialization sp;
  sp.flags.assign(k.params.size(), tj::ir::Specialization::kDiv16);
  const auto axes = tj::ir::analyze_axes(k, sp);
  int found = 0;
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    if (k.nodes[id].op != tj::ir::Op::reshape) continue;
    ++found;
    CHECK(axes[id].contiguity[1] == 32);
    CHECK(axes[id].divisibility[1] == 16);
    CHECK(axes[id].contiguity[0] == 1);
    CHECK(axes[id].divisibility[0] == 4);  // every element: a multiple of the element size
  }
  CHECK(found == 1);
  // So the load through them is vectorised (16-byte accesses) where the layout gives a thread 4 consecutive columns.
  const auto g = tj::codegen::generate(k, sp, tj::codegen::target_for("sm_90a"), {.num_warps = 1});
  CHECK(g.source.find("16-byte vector loads") != std::string::npos);
}

TEST_CASE("reshape_ir_is_verified") {
  tj::ir::Kernel k;
  tj::ir::Node a;
  a.op = tj::ir::Op::arange;
  a.type = tj::lang::type_of<std::int32_t, 96>();
  k.nodes.push_back(a);
  tj::ir::Node r;
  r.op = tj::ir::Op::reshape;
  r.type = tj::lang::type_of<std::int32_t, 8, 13>();  // 104 elements from 96
  r.args[0] = 0;
  k.nodes.push_back(r);
  CHECK_THROWS_WITH_AS(tj::ir::verify(k), doctest::Contains("a reshape keeps the element type and count"), tj::Unsupported);
  k.nodes[1].type = tj::lang::type_of<std::int32_t, 8, 12>();
  CHECK_NOTHROW(tj::ir::verify(k));
  k.nodes[1].type = tj::lang::type_of<float, 8, 12>();
  CHECK_THROWS_AS(tj::ir::verify(k), tj::Unsupported);
}

TEST_CASE("reshape_join_split_gpu_match_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  const OnDevice on{dev};
  check_all<float>(on, 31);
  check_all<std::int32_t>(on, 32);
  check_all<tj::bf16>(on, 33);
  check_join_split<float>(on, 34);
  check_bools(on);
  check_loop<float>(on, 35);
  check_f8<tj::f8e4m3>(on, 36);
  check_f8<tj::f8e5m2>(on, 37);
  const auto x = inputs<float>(192, 38);
  expect<SharedArange<float>>(on, x, x, 192);
  check_dot(dev);
}
