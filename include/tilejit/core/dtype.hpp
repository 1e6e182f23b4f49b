// tilejit/core/dtype.hpp — element types: the run-time tag (DType), the
// host-side storage types for half precisions, and the C++ <-> DType map.
//
// f16 is IEEE binary16; bf16 is the upper half of an IEEE binary32. Host
// conversions round to nearest, ties to even, and keep NaN a NaN.
#pragma once
#include <bit>
#include <cmath>
#include <limits>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tilejit {

enum class DType : std::uint8_t {
  i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, f8e4nv, f8e5, f8e4b15,
};

constexpr std::string_view name(DType t) {
  switch (t) {
    case DType::i1: return "i1";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f8e4nv: return "f8e4nv";
    case DType::f8e5: return "f8e5";
    case DType::f8e4b15: return "f8e4b15";
  }
  return "?";
}

/// Size of one element in bytes (i1 is stored as one byte).
constexpr int size_bytes(DType t) {
  switch (t) {
    case DType::i1: case DType::i8: case DType::u8:
    case DType::f8e4nv: case DType::f8e5: case DType::f8e4b15: return 1;
    case DType::i16: case DType::u16: case DType::f16: case DType::bf16: return 2;
    case DType::i32: case DType::u32: case DType::f32: return 4;
    case DType::i64: case DType::u64: case DType::f64: return 8;
  }
  return 0;
}

constexpr bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64 ||
         t == DType::f8e4nv || t == DType::f8e5 || t == DType::f8e4b15;
}
constexpr bool is_int(DType t) { return !is_float(t); }
constexpr bool is_signed_int(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}

/// Host storage of an IEEE binary16 value.
struct f16 {
  std::uint16_t bits = 0;
  f16() = default;
  explicit f16(float v) : bits(from_float(v)) {}
  explicit operator float() const { return to_float(bits); }

  static std::uint16_t from_float(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    std::uint32_t sign = (x >> 16) & 0x8000u;
    std::uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
    if (absx >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u); // overflow -> inf
    if (absx < 0x38800000u) {  // subnormal or zero in f16
      // value = absx as float; f16 subnormal unit is 2^-24.
      float a = std::bit_cast<float>(absx);
      float scaled = a * 16777216.0f;  // 2^24, exact
      // round to nearest even
      auto q = static_cast<std::uint32_t>(scaled);
      float rem = scaled - static_cast<float>(q);
      if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
      return static_cast<std::uint16_t>(sign | q);
    }
    std::uint32_t mant = absx & 0x7fffffu;
    std::uint32_t exp = (absx >> 23) - 127 + 15;
    std::uint32_t h = (exp << 10) | (mant >> 13);
    std::uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  static float to_float(std::uint16_t h) {
    std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      float v = static_cast<float>(mant) / 16777216.0f;
      return sign ? -v : v;
    }
    if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  }
};

/// Host storage of a bfloat16 value.
struct bf16 {
  std::uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float v) : bits(from_float(v)) {}
  explicit operator float() const { return to_float(bits); }
  static std::uint16_t from_float(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<std::uint16_t>(x >> 16);
  }
  static float to_float(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
  }
};

/// Host storage of an 8-bit float with `E` exponent bits, `M` mantissa bits
/// and bias 2^(E-1) - 1 (OCP FP8, as NVIDIA's e4m3 / e5m2): conversion from
/// float rounds to nearest even and saturates to the largest finite value
/// (PTX `cvt.rn.satfinite`), NaN stays NaN. e4m3 (`f8e4m3`, DType::f8e4nv)
/// has no infinities, its largest finite value is 448 and S.1111.111 is NaN;
/// e5m2 (`f8e5m2`, DType::f8e5) is IEEE-like, largest finite 57344.
template <int E, int M>
struct fp8 {
  static constexpr int bias = (1 << (E - 1)) - 1;
  static constexpr bool ieee = E == 5;  // e5m2 has inf/NaN at the top exponent; e4m3 only NaN at 0x7f
  static constexpr std::uint8_t max_code = ieee ? 0x7b : 0x7e;
  static constexpr std::uint8_t nan_code = 0x7f;
  std::uint8_t bits = 0;
  fp8() = default;
  explicit fp8(float v) : bits(from_float(v)) {}
  explicit operator float() const { return to_float(bits); }

  static std::uint8_t from_float(float f) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
    const std::uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<std::uint8_t>(sign | nan_code);
    const int e = static_cast<int>(a >> 23) - 127;
    constexpr int emin = 1 - bias;
    std::uint32_t code;
    if (e < emin) {  // subnormal in fp8 (or zero): a multiple of 2^(emin - M)
      const double q = static_cast<double>(std::bit_cast<float>(a)) * static_cast<double>(1u << (M - emin));
      auto r = static_cast<std::uint32_t>(q);
      const double rem = q - r;
      if (rem > 0.5 || (rem == 0.5 && (r & 1u))) ++r;
      code = r;
    } else {
      const std::uint32_t mant = a & 0x7fffffu, keep = mant >> (23 - M), rest = mant & ((1u << (23 - M)) - 1),
                          half = 1u << (22 - M);
      code = (static_cast<std::uint32_t>(e + bias) << M) | keep;
      if (rest > half || (rest == half && (code & 1u))) ++code;
    }
    if (code > max_code) code = max_code;  // satfinite
    return static_cast<std::uint8_t>(sign | code);
  }
  static float to_float(std::uint8_t b) {
    const float s = (b & 0x80u) ? -1.f : 1.f;
    const int ex = (b >> M) & ((1 << E) - 1), m = b & ((1 << M) - 1);
    if (ieee && ex == (1 << E) - 1) return m ? std::numeric_limits<float>::quiet_NaN() : s * std::numeric_limits<float>::infinity();
    if (!ieee && (b & 0x7fu) == nan_code) return std::numeric_limits<float>::quiet_NaN();
    if (ex == 0) return s * std::ldexp(static_cast<float>(m), 1 - bias - M);
    return s * std::ldexp(1.f + static_cast<float>(m) / static_cast<float>(1 << M), ex - bias);
  }
};
using f8e4m3 = fp8<4, 3>;  ///< DType::f8e4nv
using f8e5m2 = fp8<5, 2>;  ///< DType::f8e5

/// `v` rounded to float by round-to-odd: truncated toward zero, then, when that lost anything, the last mantissa bit
/// set. Rounding this to a format of at most 22 significant bits (f16, bf16, f8) by nearest-even gives the
/// correctly rounded result of `v` itself, where rounding `v` to nearest float first can round twice (Boldo and
/// Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
/// The generated kernels' prelude has the same functions (tj_f64_to_f32_odd, tj_u64_to_f32_odd, tj_i64_to_f32_odd).
inline float to_f32_odd(double v) {
  const float f = static_cast<float>(v);
  const double back = static_cast<double>(f);
  if (back == v || v != v) return f;
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if (v > 0 ? back > v : back < v) --u;  // nearest was away from zero: one step toward it is the truncation
  return std::bit_cast<float>(u | 1u);
}
inline float to_f32_odd(std::uint64_t m) {
  const int drop = m >> 24 ? 64 - 24 - std::countl_zero(m) : 0;  // bits below the top 24
  const std::uint64_t top = m >> drop, sticky = drop && (m << (64 - drop)) != 0;
  return static_cast<float>((top | sticky) << drop);  // at most 24 significant bits: exact
}
inline float to_f32_odd(std::int64_t v) {
  const float m = to_f32_odd(v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v));
  return v < 0 ? -m : m;
}

/// An integer converted to float type `t` with one rounding (nearest even), as a double: C++'s own conversion for
/// f32 and f64, round-to-odd to float first for the narrower formats. `is_unsigned`: `v` holds a u64's bits.
inline double int_to_float(DType t, std::int64_t v, bool is_unsigned);

/// Round a float to the precision of `t` and back (used by the interpreter so
/// that its results carry the rounding of the real storage type).
inline double round_to(DType t, double v) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return f16::to_float(f16::from_float(static_cast<float>(v)));
    case DType::bf16: return bf16::to_float(bf16::from_float(static_cast<float>(v)));
    case DType::f8e4nv: return f8e4m3::to_float(f8e4m3::from_float(static_cast<float>(v)));
    case DType::f8e5: return f8e5m2::to_float(f8e5m2::from_float(static_cast<float>(v)));
    default: return v;
  }
}

inline double int_to_float(DType t, std::int64_t v, bool is_unsigned) {
  const auto u = static_cast<std::uint64_t>(v);
  switch (t) {
    case DType::f64: return is_unsigned ? static_cast<double>(u) : static_cast<double>(v);
    case DType::f32: return is_unsigned ? static_cast<float>(u) : static_cast<float>(v);
    default: return round_to(t, is_unsigned ? to_f32_odd(u) : to_f32_odd(v));
  }
}

/// A double converted to float type `t` with one rounding: round_to's float step by round-to-odd for the formats
/// narrower than f32 (round_to itself rounds to float first, as the kernels' arithmetic in f32 does).
inline double narrow_float(DType t, double v) {
  if (t == DType::f64 || t == DType::f32) return round_to(t, v);
  return round_to(t, static_cast<double>(to_f32_odd(v)));
}

template <class T> struct dtype_of;  // C++ element type -> DType
template <> struct dtype_of<bool> { static constexpr DType value = DType::i1; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<std::uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_of<f16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<f8e4m3> { static constexpr DType value = DType::f8e4nv; };
template <> struct dtype_of<f8e5m2> { static constexpr DType value = DType::f8e5; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

}  // namespace tilejit
