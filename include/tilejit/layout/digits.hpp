// tilejit/layout/digits.hpp — mixed-radix digit systems, the alphabet of layouts.
//
// Why digits
// ----------
// Triton's linear layouts write every index in binary and treat a layout as a
// matrix over GF(2): it works because every size is a power of two. A tile of
// 96 elements does not fit that mould, but 96 = 2^5 · 3 does fit a slightly
// wider one: write the index in *mixed radix*, one digit per prime factor.
//
// A DigitSystem is the ordered list of those radices, minor digit first. Each
// radix is a prime in {2, 3, 5, 7}; a factor 9 is two radix-3 digits, a factor
// 8 three radix-2 digits. For digits r0, r1, ..., r(n-1):
//
//     stride(k) = r0 · r1 · ... · r(k-1)          (stride(0) = 1)
//     size()    = stride(n)
//     index i   = d0·stride(0) + d1·stride(1) + ... ,   0 <= dk < rk
//
// Worked example: 96 elements, 32 lanes × 3 registers.
//
//     digits [2,2,2,2,2,3]  ("lanes minor"):     i = d0 + 2d1 + 4d2 + 8d3 + 16d4 + 32d5
//     digits [3,2,2,2,2,2]  ("registers minor"): i = d0 + 3d1 + 6d2 + 12d3 + 24d4 + 48d5
//
// Both have size 96, but they are *different* digit systems: index 33 is
// (1,0,0,0,0,1) in the first (33 = 1 + 32) and (0,1,1,0,1,0) in the second
// (33 = 3·11 and 11 = 1 + 2 + 8). Layouts only ever combine digits of one
// system with digits of the same system; converting between the two orders is
// a permutation of elements, not a digit-wise linear map (see linear_layout.hpp).
//
// Arithmetic without carries
// --------------------------
// A layout adds indices digit by digit, each digit modulo its own radix, with
// no carry into the next digit (for an all-binary system this is XOR). So
// add(a, b) and scale(a, c) below are *not* integer addition and multiplication:
// in [2,2,2,2,2,3], add(1, 1) = 0 and add(32, 32) = 64 (digit 5: 1 + 1 = 2 < 3),
// add(64, 32) = 0 (2 + 1 = 3 ≡ 0 mod 3).
//
// Errors and constant evaluation
// ------------------------------
// Everything here is constexpr and heap-free (fixed-capacity arrays), so a
// DigitSystem is a literal type usable in constant expressions. A precondition
// violation (a size with a prime factor other than 2, 3, 5, 7; too many digits;
// an index out of range) throws tilejit::LayoutError at run time. In a
// constant expression the same throw is not allowed, so the compiler rejects
// the program and its note points at the failing check ("call to
// non-'constexpr' function ... throw_layout_error") — a compile error, never a
// silently wrong constant.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include "tilejit/core/error.hpp"

namespace tilejit::layout {

/// Fixed-capacity message text, usable in constant expressions. Layout
/// operations that can fail say why in one of these; text beyond the capacity
/// is cut and ends in "...".
class Reason {
 public:
  static constexpr int kCapacity = 384;  // bytes of text, including the terminating NUL

  constexpr Reason() = default;
  constexpr explicit Reason(std::string_view text) { *this << text; }

  constexpr Reason& operator<<(std::string_view text) {
    for (char c : text) put(c);
    return *this;
  }
  constexpr Reason& operator<<(const char* text) { return *this << std::string_view(text); }
  constexpr Reason& operator<<(long long value) {
    if (value < 0) {
      put('-');
      // -(value + 1) + 1 avoids overflow at the most negative value.
      return append_unsigned(static_cast<unsigned long long>(-(value + 1)) + 1);
    }
    return append_unsigned(static_cast<unsigned long long>(value));
  }
  constexpr Reason& operator<<(int value) { return *this << static_cast<long long>(value); }

  [[nodiscard]] constexpr std::string_view view() const {
    return std::string_view(buf_.data(), static_cast<std::size_t>(len_));
  }
  [[nodiscard]] constexpr const char* c_str() const { return buf_.data(); }
  [[nodiscard]] constexpr bool empty() const { return len_ == 0; }

 private:
  constexpr void put(char c) {
    constexpr int kLast = kCapacity - 1;  // keep one byte for the NUL
    if (len_ < kLast) {
      buf_[static_cast<std::size_t>(len_++)] = c;
      if (len_ == kLast) {  // full: mark the cut
        buf_[kLast - 3] = buf_[kLast - 2] = buf_[kLast - 1] = '.';
      }
    }
  }
  constexpr Reason& append_unsigned(unsigned long long v) {
    std::array<char, 24> tmp{};
    int n = 0;
    do {
      tmp[static_cast<std::size_t>(n++)] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) put(tmp[static_cast<std::size_t>(--n)]);
    return *this;
  }

  std::array<char, kCapacity> buf_{};
  int len_ = 0;
};

namespace detail {
/// The one place layout code turns a Reason into an exception. It is not
/// constexpr on purpose: reaching it during constant evaluation is a compile
/// error whose note names this function and the call site that failed.
[[noreturn]] inline void throw_layout_error(const Reason& why) {
  throw LayoutError(std::string(why.view()));
}

constexpr bool is_digit_prime(int r) { return r == 2 || r == 3 || r == 5 || r == 7; }
}  // namespace detail

/// An ordered list of prime radices (2, 3, 5 or 7), minor digit first; it
/// fixes how an index of one dimension is written as digits.
///
/// Invariants: num_digits() <= kMaxDigits; every radix is 2, 3, 5 or 7;
/// size() = product of the radices fits in an int. The default-constructed
/// system has no digits and size 1 (a dimension with one element).
class DigitSystem {
 public:
  static constexpr int kMaxDigits = 24;
  /// Digit k of an index, minor first; entries at k >= num_digits() are 0.
  using Digits = std::array<int, kMaxDigits>;

  constexpr DigitSystem() = default;

  /// The digits given, minor first. Throws LayoutError (compile error in a
  /// constant expression) for a radix outside {2,3,5,7} or too many digits.
  constexpr DigitSystem(std::initializer_list<int> radices) {
    for (int r : radices) push_back(r);
  }

  /// The digits of n in ascending-prime order: factor(96) = [2,2,2,2,2,3],
  /// factor(9) = [3,3], factor(1) = []. Postcondition: factor(n).size() == n.
  /// Throws LayoutError naming n and the offending factor when n < 1 or n
  /// has a prime factor other than 2, 3, 5, 7 (e.g. 96 is fine, 11 is not).
  [[nodiscard]] static constexpr DigitSystem factor(int n) {
    if (n < 1) detail::throw_layout_error(Reason("size ") << n << " is not positive");
    DigitSystem ds;
    int rest = n;
    for (int p : {2, 3, 5, 7}) {
      while (rest % p == 0) {
        if (ds.n_ == kMaxDigits) {
          detail::throw_layout_error(Reason("size ")
                                     << n << " needs more than " << kMaxDigits << " digits");
        }
        ds.push_back(p);
        rest /= p;
      }
    }
    if (rest != 1) {
      detail::throw_layout_error(Reason("size ")
                                 << n << " has the factor " << rest
                                 << ", which is not a product of 2, 3, 5 and 7; layouts "
                                    "support sizes 2^a·3^b·5^c·7^d (pad to one otherwise)");
    }
    return ds;
  }

  /// Appends a digit above the current ones. Postcondition: num_digits() grew
  /// by one and size() was multiplied by radix. Throws LayoutError if radix is
  /// not 2, 3, 5 or 7, if kMaxDigits would be exceeded, or if size() would
  /// overflow an int.
  constexpr void push_back(int radix) {
    if (!detail::is_digit_prime(radix)) {
      detail::throw_layout_error(Reason("digit radix ") << radix << " is not one of 2, 3, 5, 7");
    }
    if (n_ == kMaxDigits) {
      detail::throw_layout_error(Reason("a digit system holds at most ")
                                 << kMaxDigits << " digits");
    }
    if (size_ > std::numeric_limits<int>::max() / radix) {
      detail::throw_layout_error(Reason("dimension size ")
                                 << size_ << " x " << radix << " overflows int");
    }
    radix_[static_cast<std::size_t>(n_++)] = static_cast<std::uint8_t>(radix);
    size_ *= radix;
  }

  /// This system's digits followed by above's digits (above's digit 0 sits at
  /// stride size()). Postcondition: size() == this->size() · above.size().
  [[nodiscard]] constexpr DigitSystem concat(const DigitSystem& above) const {
    DigitSystem r = *this;
    for (int k = 0; k < above.n_; ++k) r.push_back(above.radix(k));
    return r;
  }

  /// The lowest n digits. Precondition: 0 <= n <= num_digits().
  [[nodiscard]] constexpr DigitSystem prefix(int n) const {
    check_digit_count(n);
    DigitSystem r;
    for (int k = 0; k < n; ++k) r.push_back(radix(k));
    return r;
  }

  /// Digits first, first+1, ..., first+n-1 as a system of their own (their
  /// strides restart at 1). Precondition: 0 <= first, 0 <= n, first + n <=
  /// num_digits(). prefix(n) == slice(0, n); concat splits back into slices:
  /// a.concat(b).slice(a.num_digits(), b.num_digits()) == b.
  [[nodiscard]] constexpr DigitSystem slice(int first, int n) const {
    if (first < 0 || n < 0 || first + n > n_) {
      detail::throw_layout_error(Reason("digit slice [")
                                 << first << ", " << first + n << ") is outside [0, " << n_ << "]");
    }
    DigitSystem r;
    for (int k = first; k < first + n; ++k) r.push_back(radix(k));
    return r;
  }

  /// True when this system's digits are the highest digits of other (this
  /// system then writes the quotient index / (other.size() / size())).
  [[nodiscard]] constexpr bool is_suffix_of(const DigitSystem& other) const {
    if (n_ > other.n_) return false;
    for (int k = 0; k < n_; ++k) {
      if (radix(k) != other.radix(other.n_ - n_ + k)) return false;
    }
    return true;
  }

  /// True when this system's digits are the lowest digits of other (every
  /// index of this system is then the same index, with the same digits, in other).
  [[nodiscard]] constexpr bool is_prefix_of(const DigitSystem& other) const {
    if (n_ > other.n_) return false;
    for (int k = 0; k < n_; ++k) {
      if (radix(k) != other.radix(k)) return false;
    }
    return true;
  }

  [[nodiscard]] constexpr int num_digits() const { return n_; }
  /// The number of indices, i.e. the product of the radices.
  [[nodiscard]] constexpr int size() const { return size_; }
  [[nodiscard]] constexpr int radix(int k) const {
    check_digit(k);
    return radix_[static_cast<std::size_t>(k)];
  }
  /// The weight of digit k: the product of the radices below it. Accepts
  /// k == num_digits(), where stride(k) == size().
  [[nodiscard]] constexpr int stride(int k) const {
    check_digit_count(k);
    int s = 1;
    for (int m = 0; m < k; ++m) s *= radix(m);
    return s;
  }
  /// How many digits have radix p.
  [[nodiscard]] constexpr int count(int p) const {
    int c = 0;
    for (int k = 0; k < n_; ++k) c += radix(k) == p ? 1 : 0;
    return c;
  }

  /// Digit k of value. Precondition: 0 <= value < size().
  [[nodiscard]] constexpr int digit(int value, int k) const {
    check_value(value);
    return (value / stride(k)) % radix(k);
  }

  /// All digits of value, minor first. Postcondition: compose(decompose(v)) == v.
  [[nodiscard]] constexpr Digits decompose(int value) const {
    check_value(value);
    Digits d{};
    for (int k = 0; k < n_; ++k) {
      d[static_cast<std::size_t>(k)] = value % radix(k);
      value /= radix(k);
    }
    return d;
  }

  /// The index whose digits are d. Precondition: 0 <= d[k] < radix(k) for
  /// k < num_digits(); entries above are ignored.
  [[nodiscard]] constexpr int compose(const Digits& d) const {
    int value = 0;
    for (int k = n_ - 1; k >= 0; --k) {
      const int dk = d[static_cast<std::size_t>(k)];
      if (dk < 0 || dk >= radix(k)) {
        detail::throw_layout_error(Reason("digit ")
                                   << k << " = " << dk << " is outside [0, " << radix(k) << ")");
      }
      value = value * radix(k) + dk;
    }
    return value;
  }

  /// Digit-wise sum without carries: digit k of the result is
  /// (digit(a,k) + digit(b,k)) mod radix(k). Preconditions: a, b in [0, size()).
  [[nodiscard]] constexpr int add(int a, int b) const {
    Digits da = decompose(a);
    const Digits db = decompose(b);
    for (int k = 0; k < n_; ++k) {
      auto i = static_cast<std::size_t>(k);
      da[i] = (da[i] + db[i]) % radix(k);
    }
    return compose(da);
  }

  /// Digit-wise multiple: digit k of the result is (c · digit(a,k)) mod
  /// radix(k), for any integer c (negative c gives the digit-wise negation).
  [[nodiscard]] constexpr int scale(int a, int c) const {
    Digits da = decompose(a);
    for (int k = 0; k < n_; ++k) {
      auto i = static_cast<std::size_t>(k);
      const int r = radix(k);
      da[i] = (((c % r) + r) % r * da[i]) % r;
    }
    return compose(da);
  }

  friend constexpr bool operator==(const DigitSystem& a, const DigitSystem& b) {
    return a.n_ == b.n_ && a.is_prefix_of(b);
  }

 private:
  constexpr void check_digit(int k) const {
    if (k < 0 || k >= n_) {
      detail::throw_layout_error(Reason("digit index ") << k << " is outside [0, " << n_ << ")");
    }
  }
  constexpr void check_digit_count(int k) const {
    if (k < 0 || k > n_) {
      detail::throw_layout_error(Reason("digit count ") << k << " is outside [0, " << n_ << "]");
    }
  }
  constexpr void check_value(int value) const {
    if (value < 0 || value >= size_) {
      detail::throw_layout_error(Reason("index ") << value << " is outside [0, " << size_ << ")");
    }
  }

  std::array<std::uint8_t, kMaxDigits> radix_{};
  int n_ = 0;
  int size_ = 1;
};

/// Writes a digit system as "[2,2,2,2,2,3]".
constexpr Reason& operator<<(Reason& r, const DigitSystem& ds) {
  r << "[";
  for (int k = 0; k < ds.num_digits(); ++k) {
    if (k != 0) r << ",";
    r << ds.radix(k);
  }
  return r << "]";
}
/// Same, on a temporary: Reason("digits ") << ds.
constexpr Reason& operator<<(Reason&& r, const DigitSystem& ds) { return r << ds; }

}  // namespace tilejit::layout
