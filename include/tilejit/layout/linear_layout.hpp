// tilejit/layout/linear_layout.hpp — mixed-radix linear layouts.
//
// What a layout is
// ----------------
// A layout says which thread holds which element of a tile. It is a function
//
//     L : (register, lane, warp, block)  ->  (dim0, dim1, ...)
//
// from *hardware coordinates* (input dimensions) to *tensor coordinates*
// (output dimensions). Every dimension has a name and a DigitSystem
// (digits.hpp): an index of that dimension is a vector of digits, minor first,
// each of prime radix 2, 3, 5 or 7.
//
// L is *linear*: L(x ⊕ y) = L(x) ⊕ L(y), where ⊕ adds digit by digit, each
// digit modulo its own radix, with no carries. So L is known once we know the
// image of every input digit set to 1 (all other digits 0) — its *image*,
// one index per output dimension. For any input,
//
//     L(x) = ⊕ over input digits k of  x_k · image(k)
//
// where x_k · v adds v to itself x_k times (digit-wise, mod each radix). When
// every radix is 2 this is exactly Triton's LinearLayout: images are Triton's
// "bases", ⊕ is XOR, and every Triton identity holds unchanged.
//
// Worked example: 96 floats = 32 lanes × 3 registers
// ---------------------------------------------------
// (a) Registers minor: lane t holds elements 3t, 3t+1, 3t+2. The output
//     dimension dim0 is written in digits [3,2,2,2,2,2]. Inputs:
//
//         register: digits [3]           image of digit 0:  1
//         lane:     digits [2,2,2,2,2]   images:  3, 6, 12, 24, 48
//
//     (lane 5, register 2): lane 5 = digits (1,0,1,0,0) → 3 ⊕ 12 = 15, and
//     2 · 1 = 2 in the radix-3 digit → 15 ⊕ 2 = 17. Element 17 = 2 + 3·5. ✓
//
// (b) Lanes minor: lane t holds elements t, t+32, t+64. Now dim0 is written in
//     digits [2,2,2,2,2,3]:
//
//         lane:     digits [2,2,2,2,2]   images:  1, 2, 4, 8, 16
//         register: digits [3]           image of digit 0:  32
//
// Both layouts are bijections onto 0..95, but they write dim0 in different
// digit systems. Converting (a) into (b) moves elements between lanes in a way
// that no digit-wise linear map of one digit system describes; the algebra
// reports that (compose / invert_and_compose name the dimension and both
// digit systems) and the caller plans a data movement instead.
//
// The validity rule
// -----------------
// An input digit of radix p may map only onto output digits of radix p.
// This is forced, not chosen: adding the input digit p times gives 0 (the
// digit wraps), so p · image must be 0 too; in an output digit of radix
// q ≠ p, p·v ≡ 0 (mod q) only for v = 0. A valid layout therefore splits into
// independent blocks, one per prime p, each a matrix over the field F_p (rows:
// output digits of radix p; columns: input digits of radix p). Rank,
// invertibility and solving are per-prime Gaussian elimination; bit counting
// or sizes never decide them.
//
// Compared with CuTe: a CuTe layout is (shape, stride) and maps coordinates
// with integer arithmetic; ours maps them digit-wise, which is what makes
// swizzles (XOR) and broadcasts (zero images) first-class, and what makes
// composition and inversion exact linear algebra.
//
// Conventions
// -----------
// * Everything is constexpr and heap-free; LinearLayout is a literal type.
// * Operations that may legitimately fail (compose, invert, ...) return a
//   Result saying why. Programming errors (bad index, invalid images, limits
//   exceeded) throw LayoutError — in a constant expression, a compile error.
// * Limits: kMaxDims input and output dimensions, DigitSystem::kMaxDigits
//   digits per dimension, and the total input and output sizes fit in an int.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include "tilejit/layout/digits.hpp"

namespace tilejit::layout {

inline constexpr int kMaxDims = 4;

/// One index per output dimension (entries past num_out_dims() are 0); also
/// used for one index per input dimension.
using Image = std::array<int, kMaxDims>;

/// A dimension name: at most kMaxLength characters, stored inline.
class Name {
 public:
  static constexpr int kMaxLength = 15;

  constexpr Name() = default;
  /// From a string literal ("lane"). Throws LayoutError if longer than
  /// kMaxLength (a compile error when constant-evaluated).
  constexpr Name(const char* s) : Name(std::string_view(s == nullptr ? "" : s)) {}
  constexpr explicit Name(std::string_view s) {
    if (s.size() > static_cast<std::size_t>(kMaxLength)) {
      detail::throw_layout_error(Reason("dimension name \"")
                                 << s << "\" is longer than " << kMaxLength << " characters");
    }
    for (std::size_t i = 0; i < s.size(); ++i) chars_[i] = s[i];
    len_ = static_cast<int>(s.size());
  }

  [[nodiscard]] constexpr std::string_view view() const {
    return std::string_view(chars_.data(), static_cast<std::size_t>(len_));
  }
  [[nodiscard]] constexpr const char* c_str() const { return chars_.data(); }
  [[nodiscard]] constexpr bool empty() const { return len_ == 0; }

  friend constexpr bool operator==(const Name& a, const Name& b) { return a.view() == b.view(); }

 private:
  std::array<char, kMaxLength + 1> chars_{};
  int len_ = 0;
};

/// Writes a name in quotes: "lane".
constexpr Reason& operator<<(Reason& r, const Name& n) { return r << "\"" << n.view() << "\""; }
constexpr Reason& operator<<(Reason&& r, const Name& n) { return r << n; }

/// The failure half of a Result: why an operation could not be done.
struct Failure {
  Reason why;
};

/// Either a value or the reason there is none (Triton returns std::optional;
/// we also keep the why). Constexpr; T must be default-constructible.
template <class T>
class [[nodiscard]] Result {
 public:
  constexpr Result(T value) : value_(value), ok_(true) {}
  constexpr Result(Failure failure) : reason_(failure.why) {}

  [[nodiscard]] constexpr bool ok() const { return ok_; }
  constexpr explicit operator bool() const { return ok_; }

  /// The value. Throws LayoutError carrying reason() if !ok().
  [[nodiscard]] constexpr const T& value() const& {
    if (!ok_) detail::throw_layout_error(reason_);
    return value_;
  }
  [[nodiscard]] constexpr T value() && {
    if (!ok_) detail::throw_layout_error(reason_);
    return value_;
  }
  /// Empty when ok().
  [[nodiscard]] constexpr std::string_view reason() const { return reason_.view(); }

 private:
  T value_{};
  Reason reason_{};
  bool ok_ = false;
};

/// A dimension declaration: name and digit system.
struct DimSpec {
  Name name;
  DigitSystem digits;
};

/// An input dimension with the images of its digits, minor digit first (one
/// Image per digit; each Image has one index per output dimension, in the
/// order the output dimensions are declared).
struct InDimImages {
  Name name;
  DigitSystem digits;
  std::initializer_list<Image> images;
};

/// An input index addressed by dimension name, for apply().
struct NamedIndex {
  Name name;
  int value = 0;
};

class LayoutBuilder;

/// A mixed-radix linear layout; see the comment at the top of this file.
class LinearLayout {
 public:
  static constexpr int kMaxDims = layout::kMaxDims;
  static constexpr int kMaxDigits = DigitSystem::kMaxDigits;

  /// The empty layout: no input and no output dimensions; the identity of *.
  constexpr LinearLayout() = default;
  [[nodiscard]] static constexpr LinearLayout empty() { return LinearLayout(); }

  // ---- factories -----------------------------------------------------------

  /// in → out as the identity, both with digits ds: image of digit k is
  /// ds.stride(k). Postcondition: apply({i})[0] == i for every i < ds.size().
  [[nodiscard]] static constexpr LinearLayout identity1D(const DigitSystem& ds, Name in, Name out) {
    LinearLayout l;
    l.add_in_dim(in, ds);
    l.add_out_dim(out, ds);
    for (int k = 0; k < ds.num_digits(); ++k) l.images_[0][k][0] = ds.stride(k);
    return l;
  }
  /// identity1D(DigitSystem::factor(size), in, out): digits in ascending-prime
  /// order, e.g. size 96 → [2,2,2,2,2,3]. identity1D(1, ...) has no digits.
  [[nodiscard]] static constexpr LinearLayout identity1D(int size, Name in, Name out) {
    return identity1D(DigitSystem::factor(size), in, out);
  }
  /// Every input of in (size `size`) maps to 0 of out (size out_size): a
  /// broadcast. Postcondition: apply({i})[0] == 0 for all i.
  [[nodiscard]] static constexpr LinearLayout zeros1D(int size, Name in, Name out,
                                                      int out_size = 1) {
    LinearLayout l;
    l.add_in_dim(in, DigitSystem::factor(size));
    l.add_out_dim(out, DigitSystem::factor(out_size));
    return l;
  }

  /// A layout from explicit images, checked for validity. Example (fact 5):
  ///
  ///   from_images({{"in1", {2,2,2}, {{4,2}, {2,1}, {1,0}}},
  ///                {"in2", {2,2},   {{1,2}, {2,1}}}},
  ///               {{"out1", {2,2,2}}, {"out2", {2,2}}});
  ///
  /// Throws LayoutError when the images are not valid: an image index outside
  /// its output dimension, a wrong number of images, duplicate names, or the
  /// validity rule broken (the message names the input dim, its digit index
  /// and radix, and the output dim, digit and radix that were hit).
  [[nodiscard]] static constexpr LinearLayout from_images(std::initializer_list<InDimImages> ins,
                                                          std::initializer_list<DimSpec> outs);
  /// As from_images, but reports a violation as a Result instead of throwing.
  [[nodiscard]] static constexpr Result<LinearLayout> try_from_images(
      std::initializer_list<InDimImages> ins, std::initializer_list<DimSpec> outs);

  // ---- queries ---------------------------------------------------------------

  [[nodiscard]] constexpr int num_in_dims() const { return num_in_; }
  [[nodiscard]] constexpr int num_out_dims() const { return num_out_; }
  [[nodiscard]] constexpr Name in_name(int i) const { return in_[check_in(i)].name; }
  [[nodiscard]] constexpr Name out_name(int j) const { return out_[check_out(j)].name; }
  [[nodiscard]] constexpr const DigitSystem& in_digits(int i) const {
    return in_[check_in(i)].digits;
  }
  [[nodiscard]] constexpr const DigitSystem& out_digits(int j) const {
    return out_[check_out(j)].digits;
  }
  [[nodiscard]] constexpr int in_size(int i) const { return in_digits(i).size(); }
  [[nodiscard]] constexpr int out_size(int j) const { return out_digits(j).size(); }
  /// Product of the input sizes (1 for no dimensions).
  [[nodiscard]] constexpr int total_in_size() const {
    int s = 1;
    for (int i = 0; i < num_in_; ++i) s *= in_size(i);
    return s;
  }
  [[nodiscard]] constexpr int total_out_size() const {
    int s = 1;
    for (int j = 0; j < num_out_; ++j) s *= out_size(j);
    return s;
  }
  /// Position of the dimension called name, or -1.
  [[nodiscard]] constexpr int in_dim_index(Name name) const {
    for (int i = 0; i < num_in_; ++i) {
      if (in_[i].name == name) return i;
    }
    return -1;
  }
  [[nodiscard]] constexpr int out_dim_index(Name name) const {
    for (int j = 0; j < num_out_; ++j) {
      if (out_[j].name == name) return j;
    }
    return -1;
  }
  /// The image of digit k of input dimension i: one index per output dim.
  [[nodiscard]] constexpr Image image(int i, int k) const {
    check_in(i);
    if (k < 0 || k >= in_[i].digits.num_digits()) {
      detail::throw_layout_error(Reason("input dim ") << in_[i].name << " has no digit " << k);
    }
    return images_[i][k];
  }

  // ---- application -----------------------------------------------------------

  /// L(ins): ins[i] is the index of input dim i (declaration order; entries
  /// past num_in_dims() are ignored). Result: one index per output dim,
  /// ⊕ over input digits of digit · image. Throws LayoutError if an index is
  /// outside its dimension.
  [[nodiscard]] constexpr Image apply(const Image& ins) const {
    Image outs{};
    for (int i = 0; i < num_in_; ++i) {
      const DigitSystem& ds = in_[i].digits;
      if (ins[i] < 0 || ins[i] >= ds.size()) {
        detail::throw_layout_error(Reason("apply: index ")
                                   << ins[i] << " of input dim " << in_[i].name
                                   << " is outside [0, " << ds.size() << ")");
      }
      const DigitSystem::Digits d = ds.decompose(ins[i]);
      for (int k = 0; k < ds.num_digits(); ++k) {
        if (d[k] == 0) continue;
        for (int j = 0; j < num_out_; ++j) {
          const DigitSystem& os = out_[j].digits;
          outs[j] = os.add(outs[j], os.scale(images_[i][k][j], d[k]));
        }
      }
    }
    return outs;
  }
  /// L by names: {{"lane", 5}, {"register", 2}}; dimensions not named are 0.
  /// Throws LayoutError for an unknown name.
  [[nodiscard]] constexpr Image apply(std::initializer_list<NamedIndex> ins) const {
    Image v{};
    for (const NamedIndex& n : ins) {
      const int i = in_dim_index(n.name);
      if (i < 0) detail::throw_layout_error(Reason("apply: no input dim ") << n.name);
      v[i] = n.value;
    }
    return apply(v);
  }

  // ---- algebra ---------------------------------------------------------------

  /// The product A * B (Triton's operator*). Postconditions:
  /// * input dims: A's in their order, then B's that A lacks; likewise outputs;
  /// * a dim in both gets B's digits above A's: digits(A*B, d) =
  ///   digits(A, d).concat(digits(B, d)), for inputs and outputs alike;
  /// * A's images are unchanged; B's images land in the digits above A's: an
  ///   image index v in a shared output dim becomes v · out_size(A, dim).
  /// So (A * B)(a ⊕ b) = A(a) + out_size(A)·B(b) per shared dimension: B's
  /// pattern repeats A's block. Throws LayoutError if limits are exceeded.
  [[nodiscard]] friend constexpr LinearLayout operator*(const LinearLayout& a,
                                                        const LinearLayout& b) {
    LinearLayout r = a;
    std::array<int, kMaxDims> out_map{};    // b's out dim j → r's out dim
    std::array<int, kMaxDims> out_shift{};  // multiplier for b's image in that dim
    for (int j = 0; j < b.num_out_; ++j) {
      int rj = r.out_dim_index(b.out_[j].name);
      if (rj < 0) {
        rj = r.add_out_dim(b.out_[j].name, b.out_[j].digits);
        out_shift[j] = 1;
      } else {
        out_shift[j] = r.out_[rj].digits.size();
        r.out_[rj].digits = r.out_[rj].digits.concat(b.out_[j].digits);
      }
      out_map[j] = rj;
    }
    for (int i = 0; i < b.num_in_; ++i) {
      int ri = r.in_dim_index(b.in_[i].name);
      int base = 0;
      if (ri < 0) {
        ri = r.add_in_dim(b.in_[i].name, b.in_[i].digits);
      } else {
        base = r.in_[ri].digits.num_digits();
        r.in_[ri].digits = r.in_[ri].digits.concat(b.in_[i].digits);
      }
      for (int k = 0; k < b.in_[i].digits.num_digits(); ++k) {
        Image img{};
        for (int j = 0; j < b.num_out_; ++j) img[out_map[j]] = b.images_[i][k][j] * out_shift[j];
        r.images_[ri][base + k] = img;
      }
    }
    r.check_total_sizes();
    return r;
  }
  constexpr LinearLayout& operator*=(const LinearLayout& b) { return *this = *this * b; }

  /// outer ∘ this: x ↦ outer(this(x)). Requires this's output dims and
  /// outer's input dims to have the same names (order may differ) and each of
  /// this's output digit systems to be a prefix of (usually: equal to) outer's
  /// input digit system of the same name. Otherwise fails, naming the dim and
  /// both digit systems — e.g. [3,2,2,2,2,2] vs [2,2,2,2,2,3], a change of
  /// digit order that no digit-wise map expresses.
  /// Postcondition: result.apply(x) == outer.apply(this->apply(x) reordered
  /// to outer's input order); inputs are this's, outputs are outer's.
  [[nodiscard]] constexpr Result<LinearLayout> compose(const LinearLayout& outer) const;

  /// L⁻¹, when L is a bijection: inputs are L's outputs and vice versa, and
  /// invert(L) ∘ L and L ∘ invert(L) are identities. Decided per prime p: the
  /// radix-p block must be square and of full rank over F_p. Fails otherwise,
  /// naming the prime and the counts or rank.
  [[nodiscard]] constexpr Result<LinearLayout> invert() const;

  /// C with other ∘ C = this (Triton's invertAndCompose; C = other⁻¹ ∘ this
  /// when other is invertible). C's inputs are this's, its outputs are other's
  /// inputs. Requires the same output dim names (order may differ) and each of
  /// this's output digit systems a prefix of other's. If other is not
  /// injective, several C exist; this one never uses an input digit of other
  /// that depends on lower ones (declaration order, minor digit first), so
  /// broadcast copies resolve to the lowest-numbered holder. Fails if some
  /// value of this is not a value of other (other not surjective enough).
  [[nodiscard]] constexpr Result<LinearLayout> invert_and_compose(const LinearLayout& other) const;

  /// Every output index is reached (per prime: rank = number of output digits).
  [[nodiscard]] constexpr bool is_surjective() const;
  /// No two inputs share an output (per prime: rank = number of input digits).
  [[nodiscard]] constexpr bool is_injective() const;
  [[nodiscard]] constexpr bool is_bijective() const { return is_surjective() && is_injective(); }

  // ---- reshaping helpers -------------------------------------------------------

  /// The layout without output dim j: images keep their other components.
  /// Used for slice layouts (the reduced dimension disappears).
  [[nodiscard]] constexpr LinearLayout remove_out_dim(int j) const {
    check_out(j);
    LinearLayout r = *this;
    for (int m = j; m + 1 < num_out_; ++m) r.out_[m] = r.out_[m + 1];
    r.out_[num_out_ - 1] = Dim{};
    for (int i = 0; i < num_in_; ++i) {
      for (int k = 0; k < kMaxDigits; ++k) {
        for (int m = j; m + 1 < num_out_; ++m) r.images_[i][k][m] = r.images_[i][k][m + 1];
        r.images_[i][k][num_out_ - 1] = 0;
      }
    }
    --r.num_out_;
    return r;
  }
  /// Same layout with input dim i called name (must not clash with another).
  [[nodiscard]] constexpr LinearLayout rename_in_dim(int i, Name name) const {
    check_in(i);
    const int other = in_dim_index(name);
    if (other >= 0 && other != i) {
      detail::throw_layout_error(Reason("duplicate input dim ") << name);
    }
    LinearLayout r = *this;
    r.in_[i].name = name;
    return r;
  }
  /// Same layout with output dim j called name (must not clash with another).
  [[nodiscard]] constexpr LinearLayout rename_out_dim(int j, Name name) const {
    check_out(j);
    const int other = out_dim_index(name);
    if (other >= 0 && other != j) {
      detail::throw_layout_error(Reason("duplicate output dim ") << name);
    }
    LinearLayout r = *this;
    r.out_[j].name = name;
    return r;
  }

  /// Same dims (names, digit systems, order) and same images.
  friend constexpr bool operator==(const LinearLayout& a, const LinearLayout& b) {
    if (a.num_in_ != b.num_in_ || a.num_out_ != b.num_out_) return false;
    for (int j = 0; j < a.num_out_; ++j) {
      if (!(a.out_[j].name == b.out_[j].name) || !(a.out_[j].digits == b.out_[j].digits)) {
        return false;
      }
    }
    for (int i = 0; i < a.num_in_; ++i) {
      if (!(a.in_[i].name == b.in_[i].name) || !(a.in_[i].digits == b.in_[i].digits)) {
        return false;
      }
      for (int k = 0; k < a.in_[i].digits.num_digits(); ++k) {
        if (a.images_[i][k] != b.images_[i][k]) return false;
      }
    }
    return true;
  }

  /// Human-readable form for diagnostics and test failures, e.g.
  /// "register[3] -> (1); lane[2,2,2,2,2] -> (3) (6) (12) (24) (48) => dim0[3,2,2,2,2,2]".
  [[nodiscard]] std::string to_string() const {
    // Appends piece by piece (GCC 12 warns falsely on "," + std::string).
    auto digits = [](std::string& s, const DigitSystem& ds) {
      s += '[';
      for (int k = 0; k < ds.num_digits(); ++k) {
        if (k != 0) s += ',';
        s += std::to_string(ds.radix(k));
      }
      s += ']';
    };
    std::string s;
    for (int i = 0; i < num_in_; ++i) {
      if (i != 0) s += "; ";
      s += in_[i].name.view();
      digits(s, in_[i].digits);
      s += " ->";
      for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
        s += " (";
        for (int j = 0; j < num_out_; ++j) {
          if (j != 0) s += ',';
          s += std::to_string(images_[i][k][j]);
        }
        s += ')';
      }
    }
    s += " =>";
    for (int j = 0; j < num_out_; ++j) {
      s += ' ';
      s += out_[j].name.view();
      digits(s, out_[j].digits);
    }
    return s;
  }

 private:
  friend class LayoutBuilder;

  struct Dim {
    Name name;
    DigitSystem digits;
  };
  /// A digit position: digit `digit` of dimension `dim`.
  struct DigitRef {
    int dim = 0;
    int digit = 0;
  };
  /// All digits of one radix across dimensions; at most 30 because the total
  /// size fits in an int and every digit is at least 2.
  static constexpr int kMaxPrimeDigits = 30;
  struct DigitList {
    std::array<DigitRef, kMaxPrimeDigits> refs{};
    int n = 0;
  };
  /// A matrix over F_p, wide enough for [A | B] with A and B of
  /// kMaxPrimeDigits columns each.
  struct ModMatrix {
    std::array<std::array<std::uint8_t, 2 * kMaxPrimeDigits>, kMaxPrimeDigits> a{};
    int rows = 0;
    int cols = 0;
  };

  constexpr int check_in(int i) const {
    if (i < 0 || i >= num_in_) {
      detail::throw_layout_error(Reason("input dim index ")
                                 << i << " is outside [0, " << num_in_ << ")");
    }
    return i;
  }
  constexpr int check_out(int j) const {
    if (j < 0 || j >= num_out_) {
      detail::throw_layout_error(Reason("output dim index ")
                                 << j << " is outside [0, " << num_out_ << ")");
    }
    return j;
  }
  constexpr int add_in_dim(Name name, const DigitSystem& ds) {
    if (num_in_ == kMaxDims) {
      detail::throw_layout_error(Reason("a layout has at most ")
                                 << kMaxDims << " input dims; cannot add " << name);
    }
    in_[num_in_] = Dim{name, ds};
    return num_in_++;
  }
  constexpr int add_out_dim(Name name, const DigitSystem& ds) {
    if (num_out_ == kMaxDims) {
      detail::throw_layout_error(Reason("a layout has at most ")
                                 << kMaxDims << " output dims; cannot add " << name);
    }
    out_[num_out_] = Dim{name, ds};
    return num_out_++;
  }
  constexpr void check_total_sizes() const {
    long long in = 1, out = 1;
    for (int i = 0; i < num_in_; ++i) in *= in_[i].digits.size();
    for (int j = 0; j < num_out_; ++j) out *= out_[j].digits.size();
    if (in > std::numeric_limits<int>::max() || out > std::numeric_limits<int>::max()) {
      detail::throw_layout_error(Reason("total layout size (")
                                 << in << " inputs, " << out << " outputs) overflows int");
    }
  }

  /// The one place the invariants are checked; empty Reason when valid.
  constexpr Reason validate() const;

  static constexpr DigitList digits_of_radix(const std::array<Dim, kMaxDims>& dims, int n, int p) {
    DigitList l;
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < dims[d].digits.num_digits(); ++k) {
        if (dims[d].digits.radix(k) == p) l.refs[l.n++] = DigitRef{d, k};
      }
    }
    return l;
  }
  /// The radix-p block: rows are output digits of radix p, columns input
  /// digits of radix p; entry = that output digit of the input digit's image.
  constexpr ModMatrix block(int p, const DigitList& rows, const DigitList& cols) const {
    ModMatrix m;
    m.rows = rows.n;
    m.cols = cols.n;
    for (int c = 0; c < cols.n; ++c) {
      const Image& img = images_[cols.refs[c].dim][cols.refs[c].digit];
      for (int r = 0; r < rows.n; ++r) {
        const DigitRef o = rows.refs[r];
        m.a[r][c] = static_cast<std::uint8_t>(out_[o.dim].digits.digit(img[o.dim], o.digit) % p);
      }
    }
    return m;
  }
  static constexpr int inverse_mod(int x, int p) {
    for (int y = 1; y < p; ++y) {
      if (x * y % p == 1) return y;
    }
    return 0;  // x ≡ 0 has no inverse; callers never ask
  }
  /// Brings m to reduced row-echelon form over F_p, choosing pivots among the
  /// first pivot_cols columns, lowest column first. Returns the rank;
  /// pivot[r] is the pivot column of row r < rank.
  static constexpr int row_reduce(ModMatrix& m, int p, int pivot_cols,
                                  std::array<int, kMaxPrimeDigits>& pivot) {
    int rank = 0;
    for (int c = 0; c < pivot_cols && rank < m.rows; ++c) {
      int r = rank;
      while (r < m.rows && m.a[r][c] == 0) ++r;
      if (r == m.rows) continue;
      if (r != rank) {
        const auto tmp = m.a[r];
        m.a[r] = m.a[rank];
        m.a[rank] = tmp;
      }
      const int inv = inverse_mod(m.a[rank][c], p);
      for (int cc = 0; cc < m.cols; ++cc)
        m.a[rank][cc] = static_cast<std::uint8_t>(m.a[rank][cc] * inv % p);
      for (int rr = 0; rr < m.rows; ++rr) {
        if (rr == rank || m.a[rr][c] == 0) continue;
        const int f = m.a[rr][c];
        for (int cc = 0; cc < m.cols; ++cc) {
          m.a[rr][cc] = static_cast<std::uint8_t>((m.a[rr][cc] + (p - f) * m.a[rank][cc]) % p);
        }
      }
      pivot[rank++] = c;
    }
    return rank;
  }
  constexpr int rank(int p, const DigitList& rows, const DigitList& cols) const {
    ModMatrix m = block(p, rows, cols);
    std::array<int, kMaxPrimeDigits> pivot{};
    return row_reduce(m, p, m.cols, pivot);
  }
  /// Checks that outer's dims called like this's output dims exist and that
  /// this's digit systems are prefixes of outer's. `what` names the caller.
  static constexpr Reason match_dims(const char* what, const std::array<Dim, kMaxDims>& mine,
                                     int n_mine, const char* mine_role,
                                     const std::array<Dim, kMaxDims>& theirs, int n_theirs,
                                     const char* their_role, std::array<int, kMaxDims>& map) {
    Reason why;
    if (n_mine != n_theirs) {
      why << what << ": this layout has " << n_mine << " " << mine_role
          << " dims but the other has " << n_theirs << " " << their_role << " dims";
      return why;
    }
    for (int j = 0; j < n_mine; ++j) {
      int m = -1;
      for (int t = 0; t < n_theirs; ++t) {
        if (theirs[t].name == mine[j].name) m = t;
      }
      if (m < 0) {
        why << what << ": " << mine_role << " dim " << mine[j].name << " of this layout is not a "
            << their_role << " dim of the other";
        return why;
      }
      if (!mine[j].digits.is_prefix_of(theirs[m].digits)) {
        why << what << ": dim " << mine[j].name << " has digits " << mine[j].digits << " here but "
            << theirs[m].digits << " in the other layout";
        if (mine[j].digits.size() == theirs[m].digits.size()) {
          why << " (same size, different digit order: not a digit-wise linear map)";
        }
        return why;
      }
      map[j] = m;
    }
    return why;
  }

  std::array<Dim, kMaxDims> in_{};
  std::array<Dim, kMaxDims> out_{};
  int num_in_ = 0;
  int num_out_ = 0;
  /// images_[i][k][j]: index in output dim j of the image of digit k of input
  /// dim i. Entries outside the declared dims and digits are 0.
  std::array<std::array<Image, kMaxDigits>, kMaxDims> images_{};
};

/// Builds a layout piece by piece and checks it once at the end; the
/// general-purpose constructor behind from_images and the encodings.
///
///   LayoutBuilder b;
///   int lane = b.add_in_dim("lane", {2,2,2,2,2});
///   int dim0 = b.add_out_dim("dim0", {3,2,2,2,2,2});
///   for (int k = 0; k < 5; ++k) { Image img{}; img[dim0] = 3 << k; b.set_image(lane, k, img); }
///   LinearLayout l = b.build();
///
/// Errors (too many dims, a bad index) are remembered and reported by
/// try_build()/build(); the first one wins.
class LayoutBuilder {
 public:
  /// Declares an input dim; returns its index (-1 after an error).
  constexpr int add_in_dim(Name name, const DigitSystem& digits) {
    if (!error_.empty()) return -1;
    if (layout_.num_in_ == kMaxDims) {
      error_ << "a layout has at most " << kMaxDims << " input dims; cannot add " << name;
      return -1;
    }
    return layout_.add_in_dim(name, digits);
  }
  /// Declares an output dim; returns its index (-1 after an error).
  constexpr int add_out_dim(Name name, const DigitSystem& digits) {
    if (!error_.empty()) return -1;
    if (layout_.num_out_ == kMaxDims) {
      error_ << "a layout has at most " << kMaxDims << " output dims; cannot add " << name;
      return -1;
    }
    return layout_.add_out_dim(name, digits);
  }
  /// Sets the image of digit `digit` of input dim in_dim (one index per
  /// output dim, in declaration order). Unset images are 0.
  constexpr LayoutBuilder& set_image(int in_dim, int digit, const Image& image) {
    if (!error_.empty()) return *this;
    if (in_dim < 0 || in_dim >= layout_.num_in_) {
      error_ << "set_image: input dim index " << in_dim << " is outside [0, " << layout_.num_in_
             << ")";
    } else if (digit < 0 || digit >= layout_.in_[in_dim].digits.num_digits()) {
      error_ << "set_image: input dim " << layout_.in_[in_dim].name << " has "
             << layout_.in_[in_dim].digits.num_digits() << " digits, not digit " << digit;
    } else {
      layout_.images_[in_dim][digit] = image;
    }
    return *this;
  }
  /// The layout, or why it is not valid (see LinearLayout's validity rule).
  [[nodiscard]] constexpr Result<LinearLayout> try_build() const {
    if (!error_.empty()) return Failure{error_};
    const Reason why = layout_.validate();
    if (!why.empty()) return Failure{why};
    return layout_;
  }
  /// As try_build(), throwing LayoutError with the reason on failure.
  [[nodiscard]] constexpr LinearLayout build() const { return try_build().value(); }

 private:
  LinearLayout layout_;
  Reason error_;
};

// ---- out-of-class definitions --------------------------------------------------

constexpr Reason LinearLayout::validate() const {
  Reason why;
  for (int i = 0; i < num_in_; ++i) {
    if (in_[i].name.empty()) return why << "input dim " << i << " has an empty name";
    for (int m = 0; m < i; ++m) {
      if (in_[m].name == in_[i].name) return why << "duplicate input dim " << in_[i].name;
    }
  }
  for (int j = 0; j < num_out_; ++j) {
    if (out_[j].name.empty()) return why << "output dim " << j << " has an empty name";
    for (int m = 0; m < j; ++m) {
      if (out_[m].name == out_[j].name) return why << "duplicate output dim " << out_[j].name;
    }
  }
  long long in = 1, out = 1;
  for (int i = 0; i < num_in_; ++i) in *= in_[i].digits.size();
  for (int j = 0; j < num_out_; ++j) out *= out_[j].digits.size();
  if (in > std::numeric_limits<int>::max() || out > std::numeric_limits<int>::max()) {
    return why << "total layout size (" << in << " inputs, " << out << " outputs) overflows int";
  }
  for (int i = 0; i < num_in_; ++i) {
    const DigitSystem& ids = in_[i].digits;
    for (int k = 0; k < ids.num_digits(); ++k) {
      const int p = ids.radix(k);
      for (int j = 0; j < num_out_; ++j) {
        const DigitSystem& ods = out_[j].digits;
        const int v = images_[i][k][j];
        if (v < 0 || v >= ods.size()) {
          return why << "image of digit " << k << " of input dim " << in_[i].name << " is " << v
                     << " in output dim " << out_[j].name << ", outside [0, " << ods.size() << ")";
        }
        for (int m = 0; m < ods.num_digits(); ++m) {
          const int q = ods.radix(m);
          if (q != p && ods.digit(v, m) != 0) {
            return why << "invalid layout: digit " << k << " of input dim " << in_[i].name
                       << " (radix " << p << ") maps onto digit " << m << " of output dim "
                       << out_[j].name << " (radix " << q << "); a radix-" << p
                       << " digit may only map onto radix-" << p << " digits";
          }
        }
      }
    }
  }
  return why;
}

constexpr Result<LinearLayout> LinearLayout::try_from_images(std::initializer_list<InDimImages> ins,
                                                             std::initializer_list<DimSpec> outs) {
  LayoutBuilder b;
  for (const DimSpec& o : outs) b.add_out_dim(o.name, o.digits);
  for (const InDimImages& in : ins) {
    const int i = b.add_in_dim(in.name, in.digits);
    if (i < 0) break;
    if (static_cast<int>(in.images.size()) != in.digits.num_digits()) {
      return Failure{Reason("input dim ")
                     << in.name << " has " << in.digits.num_digits() << " digits but "
                     << static_cast<int>(in.images.size()) << " images"};
    }
    int k = 0;
    for (const Image& img : in.images) b.set_image(i, k++, img);
  }
  return b.try_build();
}

constexpr LinearLayout LinearLayout::from_images(std::initializer_list<InDimImages> ins,
                                                 std::initializer_list<DimSpec> outs) {
  return try_from_images(ins, outs).value();
}

constexpr Result<LinearLayout> LinearLayout::compose(const LinearLayout& outer) const {
  std::array<int, kMaxDims> map{};  // this's out dim j → outer's in dim
  const Reason why =
      match_dims("compose", out_, num_out_, "output", outer.in_, outer.num_in_, "input", map);
  if (!why.empty()) return Failure{why};
  LinearLayout r;
  for (int i = 0; i < num_in_; ++i) r.add_in_dim(in_[i].name, in_[i].digits);
  for (int j = 0; j < outer.num_out_; ++j) r.add_out_dim(outer.out_[j].name, outer.out_[j].digits);
  for (int i = 0; i < num_in_; ++i) {
    for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
      Image img{};
      for (int j = 0; j < num_out_; ++j) {
        const DigitSystem& ds = out_[j].digits;
        const DigitSystem::Digits d = ds.decompose(images_[i][k][j]);
        for (int m = 0; m < ds.num_digits(); ++m) {
          if (d[m] == 0) continue;
          const Image& via = outer.images_[map[j]][m];
          for (int o = 0; o < outer.num_out_; ++o) {
            const DigitSystem& os = outer.out_[o].digits;
            img[o] = os.add(img[o], os.scale(via[o], d[m]));
          }
        }
      }
      r.images_[i][k] = img;
    }
  }
  return r;
}

constexpr Result<LinearLayout> LinearLayout::invert() const {
  LinearLayout r;
  for (int j = 0; j < num_out_; ++j) r.add_in_dim(out_[j].name, out_[j].digits);
  for (int i = 0; i < num_in_; ++i) r.add_out_dim(in_[i].name, in_[i].digits);
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(out_, num_out_, p);
    const DigitList cols = digits_of_radix(in_, num_in_, p);
    if (rows.n != cols.n) {
      return Failure{Reason("invert: not a bijection: ") << cols.n << " input digits but " << rows.n
                                                         << " output digits of radix " << p};
    }
    if (rows.n == 0) continue;
    // [M | I] → [I | M⁻¹]
    ModMatrix m = block(p, rows, cols);
    m.cols = 2 * cols.n;
    for (int r2 = 0; r2 < rows.n; ++r2) m.a[r2][cols.n + r2] = 1;
    std::array<int, kMaxPrimeDigits> pivot{};
    const int rk = row_reduce(m, p, cols.n, pivot);
    if (rk != cols.n) {
      return Failure{Reason("invert: not a bijection: the radix-")
                     << p << " part has rank " << rk << " < " << cols.n
                     << " (some outputs are never reached, others reached twice)"};
    }
    // Row c of M⁻¹ (c = input digit) holds, in column r, the coefficient of
    // input digit c in the preimage of output digit r.
    for (int rr = 0; rr < rows.n; ++rr) {
      std::array<DigitSystem::Digits, kMaxDims> d{};
      for (int c = 0; c < cols.n; ++c) {
        d[cols.refs[c].dim][cols.refs[c].digit] = m.a[c][cols.n + rr];
      }
      Image img{};
      for (int i = 0; i < num_in_; ++i) img[i] = in_[i].digits.compose(d[i]);
      r.images_[rows.refs[rr].dim][rows.refs[rr].digit] = img;
    }
  }
  return r;
}

constexpr Result<LinearLayout> LinearLayout::invert_and_compose(const LinearLayout& other) const {
  std::array<int, kMaxDims> map{};  // this's out dim j → other's out dim
  const Reason why = match_dims("invert_and_compose", out_, num_out_, "output", other.out_,
                                other.num_out_, "output", map);
  if (!why.empty()) return Failure{why};
  LinearLayout r;
  for (int i = 0; i < num_in_; ++i) r.add_in_dim(in_[i].name, in_[i].digits);
  for (int i = 0; i < other.num_in_; ++i) r.add_out_dim(other.in_[i].name, other.in_[i].digits);
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(other.out_, other.num_out_, p);
    const DigitList ocols = digits_of_radix(other.in_, other.num_in_, p);
    const DigitList tcols = digits_of_radix(in_, num_in_, p);
    if (tcols.n == 0) continue;
    // Solve A X = B over F_p, A = other's radix-p block, B = this's images
    // written in other's output digits (this's digit systems are prefixes).
    ModMatrix m = other.block(p, rows, ocols);
    m.cols = ocols.n + tcols.n;
    for (int c = 0; c < tcols.n; ++c) {
      const Image& img = images_[tcols.refs[c].dim][tcols.refs[c].digit];
      for (int j = 0; j < num_out_; ++j) {
        const DigitSystem& ds = out_[j].digits;
        for (int rr = 0; rr < rows.n; ++rr) {
          const DigitRef o = rows.refs[rr];
          if (o.dim == map[j] && o.digit < ds.num_digits()) {
            m.a[rr][ocols.n + c] = static_cast<std::uint8_t>(ds.digit(img[j], o.digit));
          }
        }
      }
    }
    std::array<int, kMaxPrimeDigits> pivot{};
    const int rk = row_reduce(m, p, ocols.n, pivot);
    for (int rr = rk; rr < rows.n; ++rr) {
      for (int c = 0; c < tcols.n; ++c) {
        if (m.a[rr][ocols.n + c] != 0) {
          const DigitRef t = tcols.refs[c];
          return Failure{Reason("invert_and_compose: the image of digit ")
                         << t.digit << " of input dim " << in_[t.dim].name << " (radix " << p
                         << ") is not a value of the other layout (it is not surjective there)"};
        }
      }
    }
    for (int c = 0; c < tcols.n; ++c) {
      std::array<DigitSystem::Digits, kMaxDims> d{};
      for (int rr = 0; rr < rk; ++rr) {
        const DigitRef o = ocols.refs[pivot[rr]];
        d[o.dim][o.digit] = m.a[rr][ocols.n + c];
      }
      Image img{};
      for (int i = 0; i < other.num_in_; ++i) img[i] = other.in_[i].digits.compose(d[i]);
      r.images_[tcols.refs[c].dim][tcols.refs[c].digit] = img;
    }
  }
  return r;
}

constexpr bool LinearLayout::is_surjective() const {
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(out_, num_out_, p);
    if (rows.n != 0 && rank(p, rows, digits_of_radix(in_, num_in_, p)) != rows.n) return false;
  }
  return true;
}

constexpr bool LinearLayout::is_injective() const {
  for (int p : {2, 3, 5, 7}) {
    const DigitList cols = digits_of_radix(in_, num_in_, p);
    if (cols.n != 0 && rank(p, digits_of_radix(out_, num_out_, p), cols) != cols.n) return false;
  }
  return true;
}

}  // namespace tilejit::layout
