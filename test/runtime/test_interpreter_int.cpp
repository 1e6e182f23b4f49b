// The interpreter's integer arithmetic is the GPU's: two's complement, wrapping, never a signal
// (INT64_MIN / -1 used to kill the process with SIGFPE; i64 add / mul / neg overflowed a C++ int64).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
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
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, x.data(), y.data(), out.data()), doctest::Contains("division by zero"),
                       tj::InvalidArgument);
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
