// The interpreter's integer arithmetic is the GPU's: two's complement, wrapping, never a signal
// (INT64_MIN / -1 used to kill the process with SIGFPE; i64 add / mul / neg overflowed a C++ int64).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

/// out[8 * i + j]: x / y, x % y, x + y, x - y, x * y, -x, abs(x), max(x, y) of x = xs[i], y = ys[i].
struct I64Ops {
  void operator()(tj::Ptr<std::int64_t> xs, tj::Ptr<std::int64_t> ys, tj::Ptr<std::int64_t> out) const {
    auto i = tj::arange<4>();
    auto x = tj::load(xs + i), y = tj::load(ys + i);
    tj::store(out + i * 8 + 0, x / y);
    tj::store(out + i * 8 + 1, x % y);
    tj::store(out + i * 8 + 2, x + y);
    tj::store(out + i * 8 + 3, x - y);
    tj::store(out + i * 8 + 4, x * y);
    tj::store(out + i * 8 + 5, -x);
    tj::store(out + i * 8 + 6, tj::abs(x));
    tj::store(out + i * 8 + 7, tj::maximum(x, y));
  }
};

/// out[3 * i + j]: x / y, x % y and (x < y) of u64 x = xs[i], y = ys[i].
struct U64Ops {
  void operator()(tj::Ptr<std::uint64_t> xs, tj::Ptr<std::uint64_t> ys, tj::Ptr<std::uint64_t> out) const {
    auto i = tj::arange<2>();
    auto x = tj::load(xs + i), y = tj::load(ys + i);
    tj::store(out + i * 3 + 0, x / y);
    tj::store(out + i * 3 + 1, x % y);
    tj::store(out + i * 3 + 2, tj::cast<std::uint64_t>(x < y));
  }
};

/// A correct kernel whose masked-off lanes divide by zero: out[i] = x[i] / y[i] for i < n; the
/// masked loads give 0 / 0 in the other lanes, which are never stored.
struct MaskedDiv {
  void operator()(tj::Ptr<std::int32_t> xs, tj::Ptr<std::int32_t> ys, tj::Ptr<std::int32_t> out, tj::Size n) const {
    auto i = tj::arange<8>();
    auto m = i < n;
    auto q = tj::load(xs + i, m) / tj::load(ys + i, m);
    tj::store(out + i, q + 1, m);
  }
};

/// where() selects the zero divisor's lanes away: out[i] = y[i] == 0 ? -1 : x[i] % y[i].
struct GuardedRem {
  void operator()(tj::Ptr<std::int32_t> xs, tj::Ptr<std::int32_t> ys, tj::Ptr<std::int32_t> out) const {
    auto i = tj::arange<4>();
    auto x = tj::load(xs + i), y = tj::load(ys + i);
    tj::store(out + i, tj::where(y == 0, tj::full<std::int32_t, 4>(-1.0), x % y));
  }
};

/// An undefined quotient used as a load mask, and one summed into a stored total.
struct DivAsMask {
  void operator()(tj::Ptr<std::int32_t> xs, tj::Ptr<std::int32_t> ys, tj::Ptr<std::int32_t> out) const {
    auto i = tj::arange<4>();
    auto q = tj::load(xs + i) / tj::load(ys + i);
    tj::store(out + i, tj::load(xs + i, q > 0));
  }
};
struct DivSummed {
  void operator()(tj::Ptr<std::int32_t> xs, tj::Ptr<std::int32_t> ys, tj::Ptr<std::int32_t> out) const {
    auto i = tj::arange<4>();
    tj::store(out, tj::sum<0>(tj::load(xs + i) / tj::load(ys + i)));
  }
};

/// Literals meeting integer tiles: INT64_MAX and INT64_MIN exactly, a u64 literal above 2^63, 2^53 + 1.
struct ExactLiterals {
  void operator()(tj::Ptr<std::int64_t> x, tj::Ptr<std::int64_t> o, tj::Ptr<std::uint64_t> u) const {
    auto i = tj::arange<2>();
    auto z = tj::load(x + i) * 0;
    tj::store(o + i, z + std::numeric_limits<std::int64_t>::max());
    tj::store(o + 2 + i, z + std::numeric_limits<std::int64_t>::min());
    tj::store(o + 4 + i, tj::load(x + i) + 9007199254740993LL);
    tj::store(u + i, tj::cast<std::uint64_t>(z) + 10000000000000000001ull);
  }
};
/// A literal the tile's type cannot hold: refused while tracing.
struct I8TooWide {
  void operator()(tj::Ptr<std::int8_t> x, tj::Ptr<std::int8_t> o) const {
    auto i = tj::arange<4>();
    auto a = tj::load(x + i);
    tj::store(o + i, tj::where(a < 200, a + 1, a));
  }
};
struct I32Fraction {
  void operator()(tj::Ptr<std::int32_t> x, tj::Ptr<std::int32_t> o) const { tj::store(o + tj::arange<4>(), tj::load(x + tj::arange<4>()) + 3.7); }
};

/// full / scalar take their value as literals are: INT64_MAX and 2^53 + 1 exactly.
struct FullLiterals {
  void operator()(tj::Ptr<std::int64_t> o) const {
    tj::store(o + tj::arange<2>(), tj::full<std::int64_t, 2>(std::numeric_limits<std::int64_t>::max()));
    tj::store(o + 2, tj::scalar<std::int64_t>(9007199254740993LL));
  }
};
struct FullI8TooWide {
  void operator()(tj::Ptr<std::int8_t> o) const { tj::store(o + tj::arange<4>(), tj::full<std::int8_t, 4>(300)); }
};
struct ScalarFraction {
  void operator()(tj::Ptr<std::int32_t> o) const { tj::store(o, tj::scalar<std::int32_t>(2.5)); }
};

/// u64 values at and above 2^63 (held as their bit pattern): abs is the identity, max / min compare unsigned.
struct U64AbsMax {
  void operator()(tj::Ptr<std::uint64_t> x, tj::Ptr<std::uint64_t> o) const {
    auto a = tj::load(x + tj::arange<8>());
    tj::store(o + tj::arange<8>(), tj::abs(a));
    tj::store(o + 8, tj::max<0>(a));
    tj::store(o + 9, tj::min<0>(a));
  }
};
struct BoolFull {
  void operator()(tj::Ptr<bool> o) const { tj::store(o + tj::arange<4>(), tj::full<bool, 4>(2)); }
};
struct PtrBigOffset {
  void operator()(tj::Ptr<float> p) const { tj::store(p + 3000000000LL + tj::arange<4>(), tj::zeros<float, 4>()); }
};

/// out[0] = v, an i64 parameter.
struct StoreI64 {
  void operator()(tj::Ptr<std::int64_t> out, tj::Int64 v) const { tj::store(out, v); }
};

/// Floats out of an integer type's range converted as the GPU's cvt.rzi does: clamped.
struct FloatToInt {
  void operator()(tj::Ptr<float> xs, tj::Ptr<std::int32_t> o32, tj::Ptr<std::int64_t> o64) const {
    auto i = tj::arange<4>();
    auto x = tj::load(xs + i);
    tj::store(o32 + i, tj::cast<std::int32_t>(x));
    tj::store(o64 + i, tj::cast<std::int64_t>(x));
  }
};
}  // namespace

TEST_CASE("interpreter_int64_min_div_minus_one_wraps_instead_of_trapping") {
  std::vector<std::int64_t> x{kMin, kMax, kMin, -7}, y{-1, 1, 2, 2}, out(32, 0);
  auto k = tj::compile<I64Ops>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), y.data(), out.data());
  // INT64_MIN / -1 and INT64_MIN % -1: what the GPU gives (wrap), no SIGFPE.
  CHECK(out[0] == kMin);
  CHECK(out[1] == 0);
  CHECK(out[2] == kMax);   // INT64_MIN + -1 wraps
  CHECK(out[3] == kMin + 1);
  CHECK(out[4] == kMin);   // INT64_MIN * -1 wraps
  CHECK(out[5] == kMin);   // -INT64_MIN wraps
  CHECK(out[6] == kMin);   // abs(INT64_MIN) wraps
  CHECK(out[7] == -1);
  // INT64_MAX op 1
  CHECK(out[8 + 0] == kMax);
  CHECK(out[8 + 2] == kMin);  // INT64_MAX + 1 wraps
  CHECK(out[8 + 4] == kMax);
  // INT64_MIN op 2
  CHECK(out[16 + 0] == kMin / 2);
  CHECK(out[16 + 3] == kMax - 1);  // INT64_MIN - 2 wraps
  CHECK(out[16 + 4] == 0);         // INT64_MIN * 2 wraps
  // -7 op 2: C's truncating division, as on the GPU
  CHECK(out[24 + 0] == -3);
  CHECK(out[24 + 1] == -1);
}

TEST_CASE("interpreter_integer_division_by_zero_is_still_a_typed_error") {
  std::vector<std::int64_t> x{1, 2, 3, 4}, y{1, 0, 1, 1}, out(32, 0);
  auto k = tj::compile<I64Ops>(tj::Device::interpreter(), {.num_warps = 1});
  // The first store of x / y reaches element 1, whose divisor is 0.
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, x.data(), y.data(), out.data()),
                       doctest::Contains("element 1 of the stored value is the result of an integer division or remainder by zero"),
                       tj::InvalidArgument);
}

TEST_CASE("interpreter_division_by_zero_in_masked_off_lanes_is_not_an_error") {
  // Lanes 5..7 load 0 / 0 (masked loads with no `other`) and are never stored: the GPU does not
  // trap, so neither may the interpreter.
  std::vector<std::int32_t> x{7, -9, 100, 5, 0, 11, 12, 13}, y{2, 4, -7, 1, 3, 0, 0, 0}, out(8, 555);
  auto k = tj::compile<MaskedDiv>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), y.data(), out.data(), 5);
  CHECK(out == std::vector<std::int32_t>{4, -1, -13, 6, 1, 555, 555, 555});
  // With n = 6 lane 5 (11 / 0) is stored: a typed error naming the element.
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, x.data(), y.data(), out.data(), 6),
                       doctest::Contains("element 5 of the stored value"), tj::InvalidArgument);
}

TEST_CASE("interpreter_where_selects_an_undefined_quotient_away") {
  std::vector<std::int32_t> x{7, 8, -9, 10}, y{3, 0, 4, 0}, out(4, 0);
  auto k = tj::compile<GuardedRem>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), y.data(), out.data());
  CHECK(out == std::vector<std::int32_t>{1, -1, -1, -1});  // -9 % 4 = -1 (C's truncation)
}

TEST_CASE("interpreter_undefined_quotients_reaching_a_mask_or_a_reduction_are_errors") {
  std::vector<std::int32_t> x{7, 8, 9, 10}, y{3, 1, 0, 2}, out(4, 0);
  auto mask = tj::compile<DivAsMask>(tj::Device::interpreter(), {.num_warps = 1});
  CHECK_THROWS_WITH_AS(mask.launch(tj::Grid{1}, x.data(), y.data(), out.data()),
                       doctest::Contains("element 2 of the load's mask"), tj::InvalidArgument);
  auto sum = tj::compile<DivSummed>(tj::Device::interpreter(), {.num_warps = 1});
  CHECK_THROWS_WITH_AS(sum.launch(tj::Grid{1}, x.data(), y.data(), out.data()),
                       doctest::Contains("element 0 of the stored value"), tj::InvalidArgument);
  y[2] = 5;  // every divisor non-zero: both run
  mask.launch(tj::Grid{1}, x.data(), y.data(), out.data());
  CHECK(out == std::vector<std::int32_t>{7, 8, 9, 10});
  sum.launch(tj::Grid{1}, x.data(), y.data(), out.data());
  CHECK(out[0] == 2 + 8 + 1 + 5);
}

TEST_CASE("integer_literals_are_exact_and_refused_when_they_do_not_fit") {
  // A review found literals passed through a double: INT64_MAX came out as INT64_MIN, 2^53 + 1 as 2^53, a u64
  // literal above 2^63 clamped, 200 against an i8 tile wrapped to -56, and i32 + 3.7 added 3.
  std::vector<std::int64_t> x{5, -7}, o(6, 0);
  std::vector<std::uint64_t> u(2, 0);
  tj::compile<ExactLiterals>(tj::Device::interpreter(), {.num_warps = 1}).launch(tj::Grid{1}, x.data(), o.data(), u.data());
  CHECK(o == std::vector<std::int64_t>{kMax, kMax, kMin, kMin, 9007199254740998LL, 9007199254740986LL});
  CHECK(u == std::vector<std::uint64_t>{10000000000000000001ull, 10000000000000000001ull});
  // The generated code spells them exactly too (INT64_MIN has no literal of its own).
  const auto src = tj::codegen::generate(tj::trace(ExactLiterals{}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 1}).source;
  CHECK(src.find("9223372036854775807LL") != std::string::npos);
  CHECK(src.find("(-9223372036854775807LL - 1)") != std::string::npos);
  CHECK(src.find("10000000000000000001ULL") != std::string::npos);
  CHECK_THROWS_WITH_AS(tj::trace(I8TooWide{}), doctest::Contains("the literal 200 does not fit the i8 tile"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(I32Fraction{}), doctest::Contains("the literal 3.7 is not a value of the i32 tile"), tj::InvalidArgument);
  // full and scalar went through a double too (and truncated 2.5 to 2).
  std::vector<std::int64_t> f(3, 0);
  tj::compile<FullLiterals>(tj::Device::interpreter(), {.num_warps = 1}).launch(tj::Grid{1}, f.data());
  CHECK(f == std::vector<std::int64_t>{kMax, kMax, 9007199254740993LL});
  CHECK_THROWS_WITH_AS(tj::trace(FullI8TooWide{}), doctest::Contains("the literal 300 does not fit the i8 tile"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(ScalarFraction{}), doctest::Contains("the literal 2.5 is not a value of the i32 tile"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(BoolFull{}), doctest::Contains("the literal 2 is not a value of the i1 (bool) tile"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(PtrBigOffset{}), doctest::Contains("does not fit an i32 offset: pass tj::scalar<std::int64_t>(3000000000)"),
                       tj::InvalidArgument);
}

TEST_CASE("interpreter_u64_abs_is_the_identity_and_reductions_compare_unsigned") {
  // A review found abs(2^64 - 1) = 1 and max<0> / min<0> of u64 comparing as signed on the interpreter (the GPU's
  // tj_abs / tj_max<unsigned long long> were right).
  std::vector<std::uint64_t> x{1, 2, 3, std::uint64_t{1} << 63, 5, ~std::uint64_t{0}, 7, 8}, o(10, 0);
  tj::compile<U64AbsMax>(tj::Device::interpreter(), {.num_warps = 1}).launch(tj::Grid{1}, x.data(), o.data());
  CHECK(std::vector<std::uint64_t>(o.begin(), o.begin() + 8) == x);
  CHECK(o[8] == ~std::uint64_t{0});
  CHECK(o[9] == 1);
}

TEST_CASE("integer_arguments_out_of_their_parameter_range_are_refused_not_wrapped") {
  std::vector<std::int64_t> out(1, 0);
  auto k = tj::compile<StoreI64>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, out.data(), std::uint64_t{1} << 62);
  CHECK(out[0] == std::int64_t{1} << 62);
  k.launch(tj::Grid{1}, out.data(), kMin);
  CHECK(out[0] == kMin);
  // 2^63 as an unsigned argument does not fit an i64 parameter: it used to arrive as INT64_MIN.
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, out.data(), std::uint64_t{1} << 63),
                       doctest::Contains("= 9223372036854775808 does not fit the kernel's 64-bit integer parameter ([-2^63, 2^63 - 1])"),
                       tj::InvalidArgument);
  CHECK(out[0] == kMin);  // nothing ran
}

TEST_CASE("interpreter_u64_division_and_compare_are_unsigned") {
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> x{big, 5}, y{2, big}, out(6, 0);
  auto k = tj::compile<U64Ops>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), y.data(), out.data());
  CHECK(out[0] == big / 2);
  CHECK(out[1] == 1);
  CHECK(out[2] == 0);  // UINT64_MAX < 2 is false
  CHECK(out[3] == 0);
  CHECK(out[4] == 5);
  CHECK(out[5] == 1);  // 5 < UINT64_MAX
}

TEST_CASE("interpreter_float_to_int_clamps_like_cvt_rzi") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x{inf, -inf, 1e30f, -2.75f};
  std::vector<std::int32_t> o32(4, 0);
  std::vector<std::int64_t> o64(4, 0);
  auto k = tj::compile<FloatToInt>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), o32.data(), o64.data());
  CHECK(o32 == std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min(),
                                         std::numeric_limits<std::int32_t>::max(), -2});
  CHECK(o64 == std::vector<std::int64_t>{kMax, kMin, kMax, -2});
}
