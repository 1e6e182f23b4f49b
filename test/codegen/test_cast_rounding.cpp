// Casts round once (a break-it pass found three double roundings): the generated code cast integers to f64 through
// float (16777217 became 16777216); the interpreter cast i64 to f32 through double (2^60 + 2^36 + 1 became 2^60, not
// 2^60 + 2^37); both cast f64 (and wide integers) to f16 / bf16 / f8 through the nearest float (1 + 2^-11 + 2^-40
// became 1, not 1 + 2^-10). Now every cast rounds to nearest even once: round-to-odd to float first where the target
// is narrower (core/dtype.hpp to_f32_odd, the prelude's tj_*_to_f32_odd).
// The reference is independent of that: the nearest value of a table of every finite value of the format, ties to
// the even code. Inputs are chosen next to the formats' midpoints, where rounding twice goes wrong, and fresh each run.
// Run on the interpreter, on the generated HIP text (host emulator), on the GPU (skipped without one), and compiled
// for sm_90a, sm_80 and gfx942.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>
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

constexpr int kN = 256;

/// One cast per output: f64 <- i32, f64 <- i64, f32 <- i64, f32 <- u64, f16 <- f64, bf16 <- f64, e4m3 <- f64,
/// bf16 <- i32, bf16 <- i64.
struct Casts {
  void operator()(tj::Ptr<double> d, tj::Ptr<int> i32, tj::Ptr<std::int64_t> i64, tj::Ptr<std::uint64_t> u64,
                  tj::Ptr<double> d_i32, tj::Ptr<double> d_i64, tj::Ptr<float> f_i64, tj::Ptr<float> f_u64,
                  tj::Ptr<tj::f16> h_d, tj::Ptr<tj::bf16> b_d, tj::Ptr<tj::f8e4m3> e_d, tj::Ptr<tj::bf16> b_i32,
                  tj::Ptr<tj::bf16> b_i64) const {
    auto o = tj::program_id(0) * kN + tj::arange<kN>();
    auto x = tj::load(d + o);
    auto a = tj::load(i32 + o);
    auto b = tj::load(i64 + o);
    auto c = tj::load(u64 + o);
    tj::store(d_i32 + o, tj::cast<double>(a));
    tj::store(d_i64 + o, tj::cast<double>(b));
    tj::store(f_i64 + o, tj::cast<float>(b));
    tj::store(f_u64 + o, tj::cast<float>(c));
    tj::store(h_d + o, tj::cast<tj::f16>(x));
    tj::store(b_d + o, tj::cast<tj::bf16>(x));
    tj::store(e_d + o, tj::cast<tj::f8e4m3>(x));
    tj::store(b_i32 + o, tj::cast<tj::bf16>(a));
    tj::store(b_i64 + o, tj::cast<tj::bf16>(b));
  }
};

/// Every finite, non-negative value of a format with its code, sorted: the reference rounds against this.
template <class F, class Code>
std::vector<std::pair<double, Code>> table(Code count) {
  std::vector<std::pair<double, Code>> t;
  for (std::uint32_t c = 0; c < count; ++c) {
    const double v = F::to_float(static_cast<Code>(c));
    if (std::isfinite(v) && !std::signbit(v)) t.push_back({v, static_cast<Code>(c)});
  }
  std::sort(t.begin(), t.end());
  return t;
}

/// x (finite) rounded to the nearest value of `t`, ties to the even code. Past the largest finite value the format
/// goes on, as rounding with an unbounded exponent does, to `beyond` (one ulp further, an even code): x that rounds
/// there overflows, to infinity, or to the largest finite value for a saturating format (tilejit's f8 casts).
template <class Code>
double nearest(std::vector<std::pair<double, Code>> t, long double x, double beyond, bool saturate) {
  const double largest = t.back().first;
  t.push_back({beyond, Code{0}});
  const bool neg = x < 0;
  const long double a = neg ? -x : x;
  auto hi = std::lower_bound(t.begin(), t.end(), a, [](const auto& e, long double v) { return e.first < v; });
  double r = beyond;
  if (hi != t.end()) {
    r = hi->first;
    if (hi != t.begin() && hi->first != a) {
      const auto lo = hi - 1;
      const long double dl = a - lo->first, dh = hi->first - a;
      if (dl < dh || (dl == dh && (lo->second & 1u) == 0)) r = lo->first;
    }
  }
  if (r == beyond) r = saturate ? largest : INFINITY;
  return neg ? -r : r;
}

struct Inputs {
  std::vector<double> d;
  std::vector<int> i32;
  std::vector<std::int64_t> i64;
  std::vector<std::uint64_t> u64;
};

/// Values a hair off the formats' midpoints (where rounding to float first lands on the midpoint itself), the
/// break-it cases, and plain random ones.
Inputs inputs(int n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  Inputs in;
  const auto h = table<tj::f16>(std::uint32_t{65536});
  const auto b = table<tj::bf16>(std::uint32_t{65536});
  const auto e = table<tj::f8e4m3>(std::uint32_t{256});
  for (int k = 0; k < n; ++k) {
    // a midpoint of f16 (k % 3 == 0), bf16 (1) or e4m3 (2) plus or minus 2^-40 of it (or exactly it)
    const auto& t = k % 3 == 0 ? h : k % 3 == 1 ? b : e;
    const std::size_t j = static_cast<std::size_t>(pick(1, static_cast<int>(t.size()) - 2));
    const double mid = (t[j].first + t[j + 1].first) / 2;
    const double off = std::ldexp(mid, -40) * pick(-1, 1);
    in.d.push_back((pick(0, 1) ? 1 : -1) * (mid + off));
    // integers with bits past a float's 24: a bf16 midpoint between 2^25 and 2^62 plus a few low bits
    const int top = pick(25, 62);
    const long long m = (1ll << top) + (static_cast<long long>(pick(0, 127)) << (top - 7)) + (1ll << (top - 8));
    const long long low = pick(-3, 3);
    in.i64.push_back((pick(0, 1) ? 1 : -1) * (m + low));
    in.u64.push_back(static_cast<unsigned long long>(m + low) << 1);
    const int top32 = pick(25, 30);
    in.i32.push_back((pick(0, 1) ? 1 : -1) *
                     static_cast<int>((1 << top32) + (pick(0, 127) << (top32 - 7)) + (1 << (top32 - 8)) + pick(-3, 3)));
  }
  const double cases_d[] = {1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 1 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40),
                            1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -35)};
  const long long cases_i[] = {(1ll << 60) + (1ll << 36) + 1, (1ll << 53) - 1, 16777217, 2147483647, 123456789,
                               -((1ll << 60) + (1ll << 36) + 1)};
  for (std::size_t k = 0; k < std::size(cases_d); ++k) in.d[k] = cases_d[k];
  for (std::size_t k = 0; k < std::size(cases_i); ++k) {
    in.i64[k] = cases_i[k];
    in.u64[k] = static_cast<unsigned long long>(cases_i[k] < 0 ? -cases_i[k] : cases_i[k]);
  }
  in.i32[0] = 16777217, in.i32[1] = 2147483647, in.i32[2] = 123456789, in.i32[3] = -2147483647 - 1;
  return in;
}

struct Outputs {
  std::vector<double> d_i32, d_i64;
  std::vector<float> f_i64, f_u64;
  std::vector<tj::f16> h_d;
  std::vector<tj::bf16> b_d, b_i32, b_i64;
  std::vector<tj::f8e4m3> e_d;
  explicit Outputs(std::size_t n)
      : d_i32(n, NAN), d_i64(n, NAN), f_i64(n, NAN), f_u64(n, NAN), h_d(n, tj::f16(NAN)),
        b_d(n, tj::bf16(NAN)), b_i32(n, tj::bf16(NAN)), b_i64(n, tj::bf16(NAN)),
        e_d(n, tj::f8e4m3(NAN)) {}
};

void check(const Inputs& in, const Outputs& out) {
  const auto h = table<tj::f16>(std::uint32_t{65536});
  const auto b = table<tj::bf16>(std::uint32_t{65536});
  const auto e = table<tj::f8e4m3>(std::uint32_t{256});
  int wrong = 0;
  auto expect = [&](const char* what, std::size_t k, double got, double want) {
    if (got == want) return;
    if (wrong++ < 8) {
      std::ostringstream m;
      m << std::setprecision(17) << what << " element " << k << ": got " << got << ", want " << want;
      MESSAGE(m.str());
    }
  };
  for (std::size_t k = 0; k < in.d.size(); ++k) {
    // long double holds every i64 and u64 exactly (64-bit mantissa on x86-64): the table's rounding is exact
    expect("f64 <- i32", k, out.d_i32[k], static_cast<double>(in.i32[k]));
    expect("f64 <- i64", k, out.d_i64[k], static_cast<double>(in.i64[k]));  // one rounding (cvtsi2sd)
    expect("f32 <- i64", k, out.f_i64[k], static_cast<double>(static_cast<float>(in.i64[k])));
    expect("f32 <- u64", k, out.f_u64[k], static_cast<double>(static_cast<float>(in.u64[k])));
    expect("f16 <- f64", k, static_cast<double>(static_cast<float>(out.h_d[k])), nearest(h, in.d[k], 65536.0, false));
    expect("bf16 <- f64", k, static_cast<double>(static_cast<float>(out.b_d[k])), nearest(b, in.d[k], std::ldexp(1.0, 128), false));
    expect("e4m3 <- f64", k, static_cast<double>(static_cast<float>(out.e_d[k])), nearest(e, in.d[k], 480.0, true));
    expect("bf16 <- i32", k, static_cast<double>(static_cast<float>(out.b_i32[k])), nearest(b, static_cast<long double>(in.i32[k]), std::ldexp(1.0, 128), false));
    expect("bf16 <- i64", k, static_cast<double>(static_cast<float>(out.b_i64[k])), nearest(b, static_cast<long double>(in.i64[k]), std::ldexp(1.0, 128), false));
  }
  CHECK(wrong == 0);
}

template <class Launch>
void run(Launch&& launch, std::uint64_t seed) {
  const int programs = 4, n = programs * kN;
  const Inputs in = inputs(n, seed);
  Outputs out(static_cast<std::size_t>(n));
  launch(programs, in, out);
  check(in, out);
}

}  // namespace

TEST_CASE("cast_rounding_compiles_for_sm90a_sm80_and_gfx942") {
  const auto k = tj::trace(Casts{});
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const auto src = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 4}).source;
    CHECK(src.find("tj_f64_to_f32_odd") != std::string::npos);
    CHECK(src.find("tj_i64_to_f32_odd") != std::string::npos);
    testing::compiles_for(src, arch, k.name);
  }
  testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 4}).source, k.name);
}

TEST_CASE("cast_rounding_interpreter_rounds_once") {
  const auto seed = testing::fresh_seed();
  CAPTURE(seed);
  run([](int programs, const Inputs& in, Outputs& o) {
        tj::compile<Casts>(tj::Device::interpreter(), {.num_warps = 4})
            .launch(tj::Grid{programs}, in.d.data(), in.i32.data(), in.i64.data(), in.u64.data(), o.d_i32.data(), o.d_i64.data(),
                    o.f_i64.data(), o.f_u64.data(), o.h_d.data(), o.b_d.data(), o.e_d.data(), o.b_i32.data(), o.b_i64.data());
      },
      seed);
}

TEST_CASE("cast_rounding_hip_code_on_the_host_emulator") {
  const auto seed = testing::fresh_seed();
  CAPTURE(seed);
  const auto hk = testing::HostKernel::compile(
      tj::codegen::generate(tj::trace(Casts{}), {}, tj::codegen::target_for("gfx1100"), {.num_warps = 4}));
  if (!hk) return;
  run([&](int programs, const Inputs& in, Outputs& o) {
        hk->launch({static_cast<unsigned>(programs), 1, 1}, in.d.data(), in.i32.data(), in.i64.data(), in.u64.data(), o.d_i32.data(),
                   o.d_i64.data(), o.f_i64.data(), o.f_u64.data(), o.h_d.data(), o.b_d.data(), o.e_d.data(), o.b_i32.data(),
                   o.b_i64.data());
      },
      seed);
}

TEST_CASE("cast_rounding_gpu_rounds_once") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  const auto seed = testing::fresh_seed();
  CAPTURE(seed);
  run([&](int programs, const Inputs& in_c, Outputs& o) {
        Inputs in = in_c;
        testing::Mirror m{dev, {}};
        auto* pd = m.up(in.d);
        auto* pi32 = m.up(in.i32);
        auto* pi64 = m.up(in.i64);
        auto* pu64 = m.up(in.u64);
        tj::compile<Casts>(dev, {.num_warps = 4})
            .launch(tj::Grid{programs}, pd, pi32, pi64, pu64, m.up(o.d_i32), m.up(o.d_i64), m.up(o.f_i64), m.up(o.f_u64),
                    m.up(o.h_d), m.up(o.b_d), m.up(o.e_d), m.up(o.b_i32), m.up(o.b_i64));
        m.down();
      },
      seed);
}
