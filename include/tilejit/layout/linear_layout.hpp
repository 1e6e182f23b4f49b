// tilejit/layout/linear_layout.hpp — mixed-radix linear layouts and their algebra.
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
// output digits of radix p; columns: input digits of radix p; fp_matrix.hpp).
// Rank, invertibility and solving are per-prime Gaussian elimination; bit
// counting or sizes never decide them. The image of L has exactly
// Π_p p^rank(p) elements.
//
// Flattening order
// ----------------
// Several dims are read as one index the way Triton does: dims in declaration
// order, the *first dim minor*, and each dim's digits minor first. So the
// flattened digit system is the concatenation of the dims' digit systems, and
// the flat index of (x0, x1, ...) is x0 + size0·(x1 + size1·(...)). Reshapes,
// flattens, "minimum offsets" and getNumConsecutiveInOut all use this order.
//
// The algebra at a glance (postconditions; details at each declaration)
// ----------------------------------------------------------------------
//   A * B                 B's digits above A's in shared dims: (A*B)(a⊕b) = A(a) + size_A·B(b)
//   A.compose(O)          (O∘A)(x) = O(A(x))
//   A.invert()            A⁻¹∘A = id and A∘A⁻¹ = id                    (A bijective)
//   A.pseudoinvert()      A(P(y)) = y, P(y) = the minimum preimage       (A surjective)
//   A.invert_and_compose(B)  B(C(x)) = A(x), C(x) = the minimum such input of B
//   divide_left(A, B)     B * C == A   (up to dim order)
//   divide_right(A, B)    C * B == A
//   reshape_ins/outs      same map, dims regrouped as runs of the flattened digits
//   flatten_ins/outs      one dim holding all digits (always possible)
//   transpose_ins/outs    dims reordered; the map is unchanged
//   sublayout(I, O)       only in dims I (others set to 0), only out dims O; sizes kept
//   concat_ins/outs       side by side: (A ⧺ B)(a, b) = A(a) ⊕ B(b); or (A(x), B(x))
//   quotient(D)           L restricted to the other dims, when L is the identity on D
//   free_variable_masks   the input digits that depend on lower ones; zeroing them
//                         picks exactly one holder (the minimum) per element
//   num_consecutive_in_out  how many consecutive inputs give consecutive outputs
//   rank(p), is_injective/surjective/bijective/invertible   per prime over F_p
//
// Minimum representatives
// -----------------------
// When B is not injective, many C satisfy B∘C = A (the broadcast copies of
// an element each qualify). invert_and_compose returns the one whose every
// value C(x) is the *smallest* input of B, in flattening order, with
// B(C(x)) = A(x). This choice is linear: over each F_p, the smallest solution
// is the one with every free variable of B (a column that depends on
// lower columns; see fp_matrix.hpp) set to zero, and the per-prime choices
// combine into the smallest mixed-radix index because each digit belongs to
// exactly one prime. pseudoinvert and free_variable_masks make the same
// choice, so "the holder of element e" means the same thing everywhere.
//
// Where the algebra is not closed
// -------------------------------
// Every operation keeps each digit's radix: it regroups, shifts or solves for
// digits, but never reorders the digits inside one dimension. With powers of
// two that loses nothing (all digit orders of 2^k coincide). With mixed
// radix it does: 96 = [2,2,2,2,2,3] cannot be reshaped into (minor 3,
// major 32), because the low digit of the result would need radix 3 where the
// flattened digits start with a 2 — it is a permutation of elements, not a
// digit-wise linear map. Such operations fail with FailureKind::kDigitOrder
// and a reason naming the dimension, both digit systems and the rule; the
// padding fallback keys on that kind. The operations that can hit it:
// reshape_ins/outs, compose and invert_and_compose (when an output digit
// system is not a prefix of the other layout's), concat_ins/outs (same size,
// different order), divide_left/right and quotient (factor digits in the
// wrong place). Other failures (not surjective, not a product, ...) are
// FailureKind::kUnsatisfied: padding would not help.
//
// Products and digit order
// ------------------------
// A product decides the digit order of a shared output dim by the order of
// its factors: identity1D(3) * identity1D(32) has digits [3,2,2,2,2,2],
// identity1D(32) * identity1D(3) has [2,2,2,2,2,3]. That is Triton's
// operator* (inner bits minor, outer bits above) unchanged. Triton has no
// operation that re-orders the digits of an existing dimension — with only
// radix 2 there is nothing to re-order — and in mixed radix such a re-order
// is the non-linear permutation above, so none is offered: build the order
// you need by choosing the factor order.
//
// Compared with Triton, Meta's NPOT fork, and CuTe
// ------------------------------------------------
// For powers of two every operation here returns what Triton's returns (the
// tests restate Triton's published facts). Meta's fork keeps inputs as bit
// vectors and adds NPOT outputs modulo N; we instead give every dimension a
// digit system, so arithmetic is always per digit in a field, a radix-3
// digit never wastes a fourth value, and rank/surjectivity stay exact
// (test_pitfalls.cpp checks each pitfall that fork hit). A CuTe layout is
// (shape, stride) with integer arithmetic; ours maps coordinates digit-wise,
// which makes swizzles (XOR) and broadcasts (zero images) first-class and
// composition and inversion exact linear algebra.
//
// Conventions
// -----------
// * Everything is constexpr and heap-free; LinearLayout is a literal type.
// * Operations that may legitimately fail return a Result carrying either
//   the layout or a Failure (reason + kind). Programming errors (a bad index,
//   an unknown dimension name, invalid images, limits exceeded) throw
//   LayoutError — in a constant expression, a compile error. No check is an
//   assert: release builds (NDEBUG) check exactly the same things.
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
#include "tilejit/layout/fp_matrix.hpp"

namespace tilejit::layout {

inline constexpr int kMaxDims = 4;

/// One index per output dimension (entries past num_out_dims() are 0); also
/// used for one index per input dimension.
using Image = std::array<int, kMaxDims>;

/// Per input dimension, a mask of its digits: bit k stands for digit k.
using DigitMasks = std::array<std::uint32_t, kMaxDims>;

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

/// Why an operation failed, in a form code can branch on.
enum class FailureKind : std::uint8_t {
  /// The inputs do not satisfy the operation's condition (not surjective,
  /// not a product, mismatched dimension names, ...). Padding would not help.
  kUnsatisfied,
  /// The result would need a different digit order inside some dimension —
  /// a permutation of elements that no digit-wise linear map describes. The
  /// algebra is not closed here; padding to powers of two (where every digit
  /// order coincides) is the fallback.
  kDigitOrder,
};

/// The failure half of a Result: why an operation could not be done.
struct Failure {
  Reason why;
  FailureKind kind = FailureKind::kUnsatisfied;
};

/// Either a value or the reason there is none (Triton returns std::optional;
/// we also keep the why). Constexpr; T must be default-constructible.
template <class T>
class [[nodiscard]] Result {
 public:
  constexpr Result(T value) : value_(value), ok_(true) {}
  constexpr Result(Failure failure) : reason_(failure.why), kind_(failure.kind) {}

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
  /// What kind of failure; meaningless when ok().
  [[nodiscard]] constexpr FailureKind kind() const { return kind_; }
  /// True for a kDigitOrder failure: the result exists as a permutation of
  /// elements but not as a layout of these digit systems (pad instead).
  [[nodiscard]] constexpr bool needs_digit_reorder() const {
    return !ok_ && kind_ == FailureKind::kDigitOrder;
  }

 private:
  T value_{};
  Reason reason_{};
  FailureKind kind_ = FailureKind::kUnsatisfied;
  bool ok_ = false;
};

/// A dimension declaration: name and digit system.
struct DimSpec {
  Name name;
  DigitSystem digits;
};

/// A dimension by name and size, for reshapes: the digits are not given
/// because they are the layout's own (a reshape only regroups digits).
struct DimSize {
  Name name;
  int size = 1;
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

/// At most kMaxDims entries (dimension names or sizes), from a braced list —
/// l.sublayout({"lane"}, {"dim0"}) — or built at run time by push_back.
template <class T>
class DimList {
 public:
  constexpr DimList() = default;
  constexpr DimList(std::initializer_list<T> items) {
    for (const T& t : items) push_back(t);
  }
  /// Throws LayoutError when the list already holds kMaxDims entries.
  constexpr void push_back(const T& t) {
    if (n_ == kMaxDims) {
      detail::throw_layout_error(Reason("a dimension list holds at most ")
                                 << kMaxDims << " entries");
    }
    items_[static_cast<std::size_t>(n_++)] = t;
  }
  [[nodiscard]] constexpr int size() const { return n_; }
  [[nodiscard]] constexpr const T& operator[](int i) const {
    if (i < 0 || i >= n_) {
      detail::throw_layout_error(Reason("dimension list index ")
                                 << i << " is outside [0, " << n_ << ")");
    }
    return items_[static_cast<std::size_t>(i)];
  }
  [[nodiscard]] constexpr const T* begin() const { return items_.data(); }
  [[nodiscard]] constexpr const T* end() const { return items_.data() + n_; }

 private:
  std::array<T, kMaxDims> items_{};
  int n_ = 0;
};
using NameList = DimList<Name>;
using SizeList = DimList<DimSize>;

class LayoutBuilder;
class LinearLayout;
constexpr Result<LinearLayout> divide_left(const LinearLayout& a, const LinearLayout& b);
constexpr Result<LinearLayout> divide_right(const LinearLayout& a, const LinearLayout& b);

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
  /// The image of digit k of input dim i: one index per output dim.
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

  // ---- products and division ---------------------------------------------------

  /// The product A * B (Triton's operator*). Postconditions:
  /// * input dims: A's in their order, then B's that A lacks; likewise outputs;
  /// * a dim in both gets B's digits above A's: digits(A*B, d) =
  ///   digits(A, d).concat(digits(B, d)), for inputs and outputs alike — so
  ///   the factor order decides a shared dim's digit order (header comment,
  ///   "Products and digit order");
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

  /// C with B * C == A (Triton's divideLeft): A with the factor B peeled off
  /// its low digits. C has A's dims, in A's order; per dim, C's digits are
  /// A's digits above B's (a dim B lacks keeps all its digits; a dim whose
  /// digits B takes entirely keeps size 1). Postcondition: (B * C) equals A
  /// after transpose_ins/outs into A's order — exactly A when B's dims come
  /// first in A. Requires, else fails naming the dim and digit:
  /// * every dim of B is a dim of A, with B's digits the lowest of A's
  ///   (same radices in the same order; kDigitOrder if only the order is off);
  /// * A's images of B's input digits equal B's images (0 in dims B lacks);
  /// * A's images of the other input digits are 0 in B's output digits.
  friend constexpr Result<LinearLayout> divide_left(const LinearLayout& a, const LinearLayout& b);
  /// C with C * B == A (Triton's divideRight): the factor B peeled off A's
  /// high digits. C has A's dims in A's order, each with A's digits below B's.
  /// Postcondition: C * B == A. Requires, else fails naming dim and digit:
  /// * every dim of B is a dim of A, with B's digits the highest of A's;
  /// * A's images of B's input digits are B's images shifted above C's
  ///   digits (v · out_size(C, dim); 0 in dims B lacks);
  /// * A's images of C's input digits are 0 in B's output digits.
  friend constexpr Result<LinearLayout> divide_right(const LinearLayout& a, const LinearLayout& b);

  // ---- composition and inverses ----------------------------------------------

  /// outer ∘ this: x ↦ outer(this(x)). Requires this's output dims and
  /// outer's input dims to have the same names (order may differ) and each of
  /// this's output digit systems to be a prefix of (usually: equal to) outer's
  /// input digit system of the same name. Otherwise fails, naming the dim and
  /// both digit systems — e.g. [3,2,2,2,2,2] vs [2,2,2,2,2,3], a change of
  /// digit order that no digit-wise map expresses (kDigitOrder).
  /// Postcondition: result.apply(x) == outer.apply(this->apply(x) reordered
  /// to outer's input order); inputs are this's, outputs are outer's.
  [[nodiscard]] constexpr Result<LinearLayout> compose(const LinearLayout& outer) const;

  /// L⁻¹, when L is a bijection: inputs are L's outputs and vice versa, and
  /// invert(L) ∘ L and L ∘ invert(L) are identities. Decided per prime p: the
  /// radix-p block must be square and of full rank over F_p. Fails otherwise
  /// (kUnsatisfied), naming the prime and the counts or rank.
  [[nodiscard]] constexpr Result<LinearLayout> invert() const;

  /// A right inverse P of a surjective L (Triton's pseudoinvert): inputs are
  /// L's outputs, outputs are L's inputs, and L(P(y)) = y for every y.
  /// Where L is not injective, P(y) is the *minimum* preimage of y in
  /// flattening order (every broadcast copy but the lowest is skipped; never
  /// an aliased or out-of-range index). Equals invert() for a bijection.
  /// Fails (kUnsatisfied) when L is not surjective, naming the prime whose
  /// block lacks rank.
  [[nodiscard]] constexpr Result<LinearLayout> pseudoinvert() const;

  /// C with other ∘ C = this (Triton's invertAndCompose; C = other⁻¹ ∘ this
  /// when other is invertible). C's inputs are this's, its outputs are other's
  /// inputs. Requires the same output dim names (order may differ) and each of
  /// this's output digit systems a prefix of other's (else kDigitOrder or
  /// kUnsatisfied, naming the dim and both digit systems).
  /// Postcondition (exact): for every input x of this, C(x) is the minimum y,
  /// in other's flattening order, with other(y) == this(x). So when other is
  /// not injective, broadcast copies resolve to the lowest holder: the
  /// smallest register, then lane, ... (for inputs declared in that order).
  /// Fails (kUnsatisfied) if some value of this is not a value of other,
  /// naming the input digit whose image is unreachable.
  [[nodiscard]] constexpr Result<LinearLayout> invert_and_compose(const LinearLayout& other) const;

  // ---- properties ---------------------------------------------------------------

  /// The rank over F_p of the radix-p block (rows: output digits of radix p,
  /// columns: input digits of radix p). The image of L has exactly
  /// Π over p of p^rank(p) elements. Throws LayoutError if p is not 2, 3, 5, 7.
  [[nodiscard]] constexpr int rank(int p) const {
    if (!detail::is_digit_prime(p)) {
      detail::throw_layout_error(Reason("rank: ") << p << " is not one of 2, 3, 5, 7");
    }
    return block_rank(p, digits_of_radix(out_, num_out_, p), digits_of_radix(in_, num_in_, p));
  }
  /// Every output index is reached (per prime: rank = number of output digits).
  [[nodiscard]] constexpr bool is_surjective() const;
  /// No two inputs share an output (per prime: rank = number of input digits).
  [[nodiscard]] constexpr bool is_injective() const;
  [[nodiscard]] constexpr bool is_bijective() const { return is_surjective() && is_injective(); }
  /// Triton's isInvertible: invert() succeeds. Same as is_bijective().
  [[nodiscard]] constexpr bool is_invertible() const { return is_bijective(); }

  /// Triton's getFreeVariableMasks: per input dim (declaration order), bit k
  /// is set when digit k is *free* — its image is a combination of the images
  /// of lower input digits (earlier dims, or lower digits of the same dim) of
  /// its radix. A digit with image 0 (a broadcast copy) is always free.
  /// Postconditions: all masks are 0 iff L is injective; the inputs whose
  /// free digits are all 0 reach every value of L exactly once, each as its
  /// minimum preimage (the holder invert_and_compose and pseudoinvert pick).
  [[nodiscard]] constexpr DigitMasks free_variable_masks() const;

  /// Triton's getNumConsecutiveInOut: the largest V among the strides of the
  /// first input dim (1, r0, r0·r1, ...) such that for all a and v < V,
  /// L(a·V + v, rest) = L(a·V, rest) + (v, 0, ...) — V consecutive inputs of
  /// the first input dim land on V consecutive elements of the first output
  /// dim, + being integer addition. 1 when there are no dims. For powers of
  /// two this is Triton's value; with mixed radix V is a product of the first
  /// dim's lowest radices (e.g. 3 for a [3,2,...] register dim mapped to
  /// consecutive elements).
  [[nodiscard]] constexpr int num_consecutive_in_out() const;

  // ---- reshaping ------------------------------------------------------------------

  /// The same map with input dims in the order given (Triton's transposeIns).
  /// Only flattening, reshapes and products see the order. Throws
  /// LayoutError unless order is a permutation of the input dim names.
  [[nodiscard]] constexpr LinearLayout transpose_ins(const NameList& order) const;
  /// Output dims in the order given; images permuted to match. Throws
  /// LayoutError unless order is a permutation of the output dim names.
  [[nodiscard]] constexpr LinearLayout transpose_outs(const NameList& order) const;

  /// New input dims (Triton's reshapeIns): the inputs are flattened (header
  /// comment, "Flattening order") and cut into consecutive runs of digits,
  /// one per new dim, minor first, whose radices multiply to its size.
  /// Outputs and every digit's image are unchanged, so the flattened map is
  /// the same: apply(new dims of flat index f) == apply(old dims of f).
  /// Fails with kDigitOrder, naming the dim, its size and the flattened
  /// digits, when no run of digits multiplies to a size — e.g. 96 =
  /// [2,2,2,2,2,3] into (3, 32): a change of digit order. Fails
  /// (kUnsatisfied) when the sizes do not multiply to total_in_size(), a name
  /// repeats or is empty, or a dim would need more than kMaxDigits digits.
  [[nodiscard]] constexpr Result<LinearLayout> reshape_ins(const SizeList& dims) const;
  /// New output dims (Triton's reshapeOuts), cut from the flattened output
  /// digits the same way; images are re-encoded so that flattening the new
  /// outputs gives the same index as flattening the old ones. Fails as
  /// reshape_ins does.
  [[nodiscard]] constexpr Result<LinearLayout> reshape_outs(const SizeList& dims) const;
  /// All inputs as one dim named like the first, holding every digit in
  /// flattening order (always representable). Throws LayoutError if that dim
  /// would need more than kMaxDigits digits. No input dims: unchanged.
  [[nodiscard]] constexpr LinearLayout flatten_ins() const {
    if (num_in_ == 0) return *this;
    return reshape_ins(SizeList{{in_[0].name, total_in_size()}}).value();
  }
  /// All outputs as one dim named like the first; see flatten_ins.
  [[nodiscard]] constexpr LinearLayout flatten_outs() const {
    if (num_out_ == 0) return *this;
    return reshape_outs(SizeList{{out_[0].name, total_out_size()}}).value();
  }

  /// Only the input dims in ins (the others are set to 0) and the output dims
  /// in outs (Triton's sublayout). Dims keep this layout's order and their
  /// digit systems — an output dim keeps its full size (e.g. 96, digits
  /// [3,2,2,2,2,2]) even if the kept inputs reach only part of it. Throws
  /// LayoutError for a name that is not a dim of this layout.
  [[nodiscard]] constexpr LinearLayout sublayout(const NameList& ins, const NameList& outs) const;
  /// sublayout(ins, outs) maps everything to 0. Throws as sublayout does.
  [[nodiscard]] constexpr bool sublayout_is_zero(const NameList& ins, const NameList& outs) const;

  /// This layout's inputs followed by other's (Triton's concatIns):
  /// result(x, y) = this(x) ⊕ other(y). Requires the same output dims (names,
  /// any order; other's images are matched by name) with equal digit systems
  /// (kDigitOrder if a size matches but the order differs) and disjoint input
  /// dims within kMaxDims. Postcondition: sublayout(this's ins, all outs) ==
  /// *this.
  [[nodiscard]] constexpr Result<LinearLayout> concat_ins(const LinearLayout& other) const;
  /// This layout's outputs followed by other's (Triton's concatOuts):
  /// result(x) = (this(x), other(x)). Requires the same input dims (names,
  /// any order) with equal digit systems and disjoint output dims within
  /// kMaxDims.
  [[nodiscard]] constexpr Result<LinearLayout> concat_outs(const LinearLayout& other) const;

  /// L without the dims in dims (Triton's quotient), when L acts on them as
  /// the identity: each named dim is both an input and an output dim with
  /// equal digit systems, its digit k maps to stride(k) in the same-named
  /// output and 0 elsewhere, and no other input reaches it. Then L is that
  /// identity times the result, and the result is sublayout(other ins, other
  /// outs). Fails otherwise, naming the dim, digit and image (kDigitOrder if
  /// a dim's input and output digits differ only in order).
  [[nodiscard]] constexpr Result<LinearLayout> quotient(const NameList& dims) const;

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
  /// All digits of one radix across dimensions, or all digits of all
  /// dimensions in flattening order; at most 30 because the total size fits
  /// in an int and every digit is at least 2.
  static constexpr int kMaxFlatDigits = 30;
  struct DigitList {
    std::array<DigitRef, kMaxFlatDigits> refs{};
    int n = 0;
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
  /// Empty when the total input and output sizes fit in an int.
  constexpr Reason total_size_problem() const {
    long long in = 1, out = 1;
    for (int i = 0; i < num_in_; ++i) in *= in_[i].digits.size();
    for (int j = 0; j < num_out_; ++j) out *= out_[j].digits.size();
    Reason why;
    if (in > std::numeric_limits<int>::max() || out > std::numeric_limits<int>::max()) {
      why << "total layout size (" << in << " inputs, " << out << " outputs) overflows int";
    }
    return why;
  }
  constexpr void check_total_sizes() const {
    const Reason why = total_size_problem();
    if (!why.empty()) detail::throw_layout_error(why);
  }

  /// The one place the invariants are checked; empty Reason when valid.
  constexpr Reason validate() const;

  /// The digits of radix p of dims[0..n), in flattening order.
  static constexpr DigitList digits_of_radix(const std::array<Dim, kMaxDims>& dims, int n, int p) {
    DigitList l;
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < dims[d].digits.num_digits(); ++k) {
        if (dims[d].digits.radix(k) == p) {
          if (l.n == kMaxFlatDigits) {
            detail::throw_layout_error(Reason("more than ") << kMaxFlatDigits << " digits");
          }
          l.refs[l.n++] = DigitRef{d, k};
        }
      }
    }
    return l;
  }
  /// Every digit of dims[0..n) in flattening order.
  static constexpr DigitList all_digits(const std::array<Dim, kMaxDims>& dims, int n) {
    DigitList l;
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < dims[d].digits.num_digits(); ++k) {
        if (l.n == kMaxFlatDigits) {
          detail::throw_layout_error(Reason("more than ") << kMaxFlatDigits << " digits");
        }
        l.refs[l.n++] = DigitRef{d, k};
      }
    }
    return l;
  }
  /// The radix-p block, rows = output digits of radix p, columns = input
  /// digits of radix p (entry = that output digit of the input digit's
  /// image), with extra_cols zero columns on the right for right-hand sides.
  constexpr FpMatrix block(int p, const DigitList& rows, const DigitList& cols,
                           int extra_cols) const {
    FpMatrix m(p, rows.n, cols.n + extra_cols);
    for (int c = 0; c < cols.n; ++c) {
      const Image& img = images_[cols.refs[c].dim][cols.refs[c].digit];
      for (int r = 0; r < rows.n; ++r) {
        const DigitRef o = rows.refs[r];
        m.set(r, c, out_[o.dim].digits.digit(img[o.dim], o.digit));
      }
    }
    return m;
  }
  constexpr int block_rank(int p, const DigitList& rows, const DigitList& cols) const {
    FpMatrix m = block(p, rows, cols, 0);
    return m.row_reduce(cols.n);
  }
  /// Checks that theirs has a dim named like each of mine, with mine's digit
  /// system a prefix of theirs; fills map. `what` names the caller. Returns a
  /// Failure with an empty reason when all is well.
  static constexpr Failure match_dims(const char* what, const std::array<Dim, kMaxDims>& mine,
                                      int n_mine, const char* mine_role,
                                      const std::array<Dim, kMaxDims>& theirs, int n_theirs,
                                      const char* their_role, std::array<int, kMaxDims>& map);
  /// divide_left / divide_right: map each of A's dims to the divisor B's
  /// (-1 when B lacks it), checking that B's digits are the lowest (`low`) or
  /// the highest of A's. An empty reason means success.
  static constexpr Failure match_divisor(const char* who, const LinearLayout& a, const LinearLayout& b, bool low,
                                         std::array<int, kMaxDims>& bin, std::array<int, kMaxDims>& bout);
  /// Checks that mine has a dim named like each of theirs, with an equal
  /// digit system and the same count; map[j] = mine's index of theirs[j].
  static constexpr Failure same_dims(const char* what, const char* role,
                                     const std::array<Dim, kMaxDims>& theirs, int n_theirs,
                                     const std::array<Dim, kMaxDims>& mine, int n_mine,
                                     std::array<int, kMaxDims>& map);
  /// order as a permutation of dims[0..n): perm[t] = index of order[t].
  static constexpr std::array<int, kMaxDims> permutation(const char* what, const char* role,
                                                         const std::array<Dim, kMaxDims>& dims,
                                                         int n, const NameList& order);
  /// Cuts the flattened digits of dims[0..n) into runs of the sizes given.
  /// run_start[m]..run_start[m+1] are the flat digits of new dim m.
  static constexpr Failure split_runs(const char* what, const char* role,
                                      const std::array<Dim, kMaxDims>& dims, int n,
                                      const SizeList& sizes, std::array<Dim, kMaxDims>& new_dims,
                                      std::array<int, kMaxDims + 1>& run_start);
  /// The identity on this layout's output dims (names and digits).
  constexpr LinearLayout identity_on_outs() const {
    LinearLayout id;
    for (int j = 0; j < num_out_; ++j) id *= identity1D(out_[j].digits, out_[j].name, out_[j].name);
    return id;
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

// ---- helpers ------------------------------------------------------------------

namespace detail {
constexpr bool listed(const NameList& names, const Name& name) {
  for (const Name& n : names) {
    if (n == name) return true;
  }
  return false;
}
/// Explains why `mine` cannot be the low (or high) digits of `theirs`, and
/// classifies it: when mine's size divides theirs, the radices could fit in
/// another order, so it is a digit-order failure.
constexpr Failure factor_mismatch(const char* what, const char* role, const Name& name,
                                  const DigitSystem& mine, const DigitSystem& theirs,
                                  const char* where) {
  Failure f;
  f.why << what << ": the divisor's " << role << " dim " << name << " has digits " << mine
        << ", which are not the " << where << " digits of the dividend's " << theirs;
  if (theirs.size() % mine.size() == 0) {
    f.kind = FailureKind::kDigitOrder;
    f.why << " (its size divides, but in a different digit order: not a digit-wise linear map)";
  }
  return f;
}
}  // namespace detail

constexpr Failure LinearLayout::match_dims(const char* what, const std::array<Dim, kMaxDims>& mine,
                                           int n_mine, const char* mine_role,
                                           const std::array<Dim, kMaxDims>& theirs, int n_theirs,
                                           const char* their_role, std::array<int, kMaxDims>& map) {
  Failure f;
  if (n_mine != n_theirs) {
    f.why << what << ": this layout has " << n_mine << " " << mine_role
          << " dims but the other has " << n_theirs << " " << their_role << " dims";
    return f;
  }
  for (int j = 0; j < n_mine; ++j) {
    int m = -1;
    for (int t = 0; t < n_theirs; ++t) {
      if (theirs[t].name == mine[j].name) m = t;
    }
    if (m < 0) {
      f.why << what << ": " << mine_role << " dim " << mine[j].name << " of this layout is not a "
            << their_role << " dim of the other";
      return f;
    }
    const DigitSystem& a = mine[j].digits;
    const DigitSystem& b = theirs[m].digits;
    if (!a.is_prefix_of(b)) {
      f.why << what << ": dim " << mine[j].name << " has digits " << a << " here but " << b
            << " in the other layout";
      if (a.size() == b.size()) {
        f.kind = FailureKind::kDigitOrder;
        f.why << " (same size, different digit order: not a digit-wise linear map)";
      } else if (a.size() < b.size()) {
        f.kind = FailureKind::kDigitOrder;
        f.why << " (the indices fit, but not as its lowest digits: a different digit order, "
                 "not a digit-wise linear map)";
      }
      return f;
    }
    map[j] = m;
  }
  return f;
}

constexpr Failure LinearLayout::same_dims(const char* what, const char* role,
                                          const std::array<Dim, kMaxDims>& theirs, int n_theirs,
                                          const std::array<Dim, kMaxDims>& mine, int n_mine,
                                          std::array<int, kMaxDims>& map) {
  Failure f;
  if (n_theirs != n_mine) {
    f.why << what << ": this layout has " << n_mine << " " << role << " dims but the other has "
          << n_theirs;
    return f;
  }
  for (int j = 0; j < n_theirs; ++j) {
    int m = -1;
    for (int t = 0; t < n_mine; ++t) {
      if (mine[t].name == theirs[j].name) m = t;
    }
    if (m < 0) {
      f.why << what << ": " << role << " dim " << theirs[j].name
            << " of the other layout is not one of this layout's";
      return f;
    }
    if (!(mine[m].digits == theirs[j].digits)) {
      f.why << what << ": " << role << " dim " << theirs[j].name << " has digits " << mine[m].digits
            << " here but " << theirs[j].digits << " in the other layout";
      if (mine[m].digits.size() == theirs[j].digits.size()) {
        f.kind = FailureKind::kDigitOrder;
        f.why << " (same size, different digit order: not a digit-wise linear map)";
      }
      return f;
    }
    map[j] = m;
  }
  return f;
}

constexpr std::array<int, kMaxDims> LinearLayout::permutation(const char* what, const char* role,
                                                              const std::array<Dim, kMaxDims>& dims,
                                                              int n, const NameList& order) {
  if (order.size() != n) {
    detail::throw_layout_error(Reason(what) << ": " << order.size() << " names given for " << n
                                            << " " << role << " dims");
  }
  std::array<int, kMaxDims> perm{};
  std::array<bool, kMaxDims> used{};
  for (int t = 0; t < n; ++t) {
    int idx = -1;
    for (int d = 0; d < n; ++d) {
      if (dims[d].name == order[t]) idx = d;
    }
    if (idx < 0) detail::throw_layout_error(Reason(what) << ": no " << role << " dim " << order[t]);
    if (used[idx]) {
      detail::throw_layout_error(Reason(what)
                                 << ": " << role << " dim " << order[t] << " is listed twice");
    }
    used[idx] = true;
    perm[t] = idx;
  }
  return perm;
}

constexpr Failure LinearLayout::split_runs(const char* what, const char* role,
                                           const std::array<Dim, kMaxDims>& dims, int n,
                                           const SizeList& sizes,
                                           std::array<Dim, kMaxDims>& new_dims,
                                           std::array<int, kMaxDims + 1>& run_start) {
  Failure f;
  long long have = 1, total = 1;
  for (int d = 0; d < n; ++d) have *= dims[d].digits.size();
  for (int m = 0; m < sizes.size(); ++m) {
    const DimSize& s = sizes[m];
    if (s.name.empty()) {
      f.why << what << ": new " << role << " dim " << m << " has an empty name";
      return f;
    }
    for (int q = 0; q < m; ++q) {
      if (sizes[q].name == s.name) {
        f.why << what << ": new " << role << " dim " << s.name << " is listed twice";
        return f;
      }
    }
    if (s.size < 1) {
      f.why << what << ": new " << role << " dim " << s.name << " has size " << s.size;
      return f;
    }
    total *= s.size;
    if (total > std::numeric_limits<int>::max()) {
      f.why << what << ": the new " << role << " sizes overflow int";
      return f;
    }
  }
  if (total != have) {
    f.why << what << ": the new " << role << " sizes multiply to " << total
          << " but the layout has " << have << " " << role << " indices";
    return f;
  }
  const DigitList flat = all_digits(dims, n);
  auto radix = [&](int q) { return dims[flat.refs[q].dim].digits.radix(flat.refs[q].digit); };
  int pos = 0;
  run_start[0] = 0;
  for (int m = 0; m < sizes.size(); ++m) {
    const DimSize& s = sizes[m];
    const int first = pos;
    DigitSystem ds;
    long long prod = 1;
    while (prod < s.size && pos < flat.n) {
      if (ds.num_digits() == kMaxDigits) {
        f.why << what << ": new " << role << " dim " << s.name << " of size " << s.size
              << " needs more than " << kMaxDigits << " digits";
        return f;
      }
      ds.push_back(radix(pos));
      prod *= radix(pos);
      ++pos;
    }
    if (prod != s.size) {
      f.kind = FailureKind::kDigitOrder;
      f.why << what << ": new " << role << " dim " << s.name << " of size " << s.size
            << " would begin at digit " << first << " of the flattened " << role << " digits [";
      for (int q = 0; q < flat.n; ++q) {
        if (q != 0) f.why << ",";
        f.why << radix(q);
      }
      f.why << "], but no run of digits from there multiplies to " << s.size
            << ": it needs a different digit order, which is not a digit-wise linear map (pad to "
               "a power of two)";
      return f;
    }
    new_dims[m] = Dim{s.name, ds};
    run_start[m + 1] = pos;
  }
  return f;
}

// ---- composition and inverses --------------------------------------------------

constexpr Result<LinearLayout> LinearLayout::compose(const LinearLayout& outer) const {
  std::array<int, kMaxDims> map{};  // this's out dim j → outer's in dim
  const Failure f =
      match_dims("compose", out_, num_out_, "output", outer.in_, outer.num_in_, "input", map);
  if (!f.why.empty()) return f;
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
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(out_, num_out_, p);
    const DigitList cols = digits_of_radix(in_, num_in_, p);
    if (rows.n != cols.n) {
      return Failure{Reason("invert: not a bijection: ") << cols.n << " input digits but " << rows.n
                                                         << " output digits of radix " << p};
    }
    if (rows.n == 0) continue;
    const int rk = block_rank(p, rows, cols);
    if (rk != cols.n) {
      return Failure{Reason("invert: not a bijection: the radix-")
                     << p << " part has rank " << rk << " < " << cols.n
                     << " (some outputs are never reached, others reached twice)"};
    }
  }
  return pseudoinvert();
}

constexpr Result<LinearLayout> LinearLayout::pseudoinvert() const {
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(out_, num_out_, p);
    if (rows.n == 0) continue;
    const int rk = block_rank(p, rows, digits_of_radix(in_, num_in_, p));
    if (rk != rows.n) {
      return Failure{Reason("pseudoinvert: not surjective: the radix-")
                     << p << " part has rank " << rk << " < " << rows.n
                     << " output digits of radix " << p << " (some elements have no holder)"};
    }
  }
  return identity_on_outs().invert_and_compose(*this);
}

constexpr Result<LinearLayout> LinearLayout::invert_and_compose(const LinearLayout& other) const {
  std::array<int, kMaxDims> map{};  // this's out dim j → other's out dim
  const Failure f = match_dims("invert_and_compose", out_, num_out_, "output", other.out_,
                               other.num_out_, "output", map);
  if (!f.why.empty()) return f;
  std::array<int, kMaxDims> mine{};  // other's out dim → this's out dim
  for (int j = 0; j < num_out_; ++j) mine[map[j]] = j;
  LinearLayout r;
  for (int i = 0; i < num_in_; ++i) r.add_in_dim(in_[i].name, in_[i].digits);
  for (int i = 0; i < other.num_in_; ++i) r.add_out_dim(other.in_[i].name, other.in_[i].digits);
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(other.out_, other.num_out_, p);
    const DigitList ocols = digits_of_radix(other.in_, other.num_in_, p);
    const DigitList tcols = digits_of_radix(in_, num_in_, p);
    if (tcols.n == 0) continue;
    // Solve A X = T over F_p: A = other's radix-p block, T = this's images
    // written in other's output digits (this's digit systems are prefixes,
    // so this's digit m of a dim is other's digit m of it).
    FpMatrix m = other.block(p, rows, ocols, tcols.n);
    for (int c = 0; c < tcols.n; ++c) {
      const Image& img = images_[tcols.refs[c].dim][tcols.refs[c].digit];
      for (int rr = 0; rr < rows.n; ++rr) {
        const DigitRef o = rows.refs[rr];
        const DigitSystem& ds = out_[mine[o.dim]].digits;
        if (o.digit < ds.num_digits()) m.set(rr, ocols.n + c, ds.digit(img[mine[o.dim]], o.digit));
      }
    }
    // Lowest-first pivots: a free column of A is one that depends on lower
    // columns, and leaving it 0 gives the minimum solution (fp_matrix.hpp).
    const int rk = m.row_reduce(ocols.n);
    for (int rr = rk; rr < rows.n; ++rr) {
      for (int c = 0; c < tcols.n; ++c) {
        if (m.at(rr, ocols.n + c) != 0) {
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
        const DigitRef o = ocols.refs[m.pivot_col(rr)];
        d[o.dim][o.digit] = m.at(rr, ocols.n + c);
      }
      Image img{};
      for (int i = 0; i < other.num_in_; ++i) img[i] = other.in_[i].digits.compose(d[i]);
      r.images_[tcols.refs[c].dim][tcols.refs[c].digit] = img;
    }
  }
  return r;
}

// ---- properties ------------------------------------------------------------------

constexpr bool LinearLayout::is_surjective() const {
  for (int p : {2, 3, 5, 7}) {
    const DigitList rows = digits_of_radix(out_, num_out_, p);
    if (rows.n != 0 && block_rank(p, rows, digits_of_radix(in_, num_in_, p)) != rows.n) {
      return false;
    }
  }
  return true;
}

constexpr bool LinearLayout::is_injective() const {
  for (int p : {2, 3, 5, 7}) {
    const DigitList cols = digits_of_radix(in_, num_in_, p);
    if (cols.n != 0 && block_rank(p, digits_of_radix(out_, num_out_, p), cols) != cols.n) {
      return false;
    }
  }
  return true;
}

constexpr DigitMasks LinearLayout::free_variable_masks() const {
  DigitMasks masks{};
  for (int p : {2, 3, 5, 7}) {
    const DigitList cols = digits_of_radix(in_, num_in_, p);
    if (cols.n == 0) continue;
    FpMatrix m = block(p, digits_of_radix(out_, num_out_, p), cols, 0);
    const int rk = m.row_reduce(cols.n);
    std::array<bool, kMaxFlatDigits> pivot{};
    for (int r = 0; r < rk; ++r) pivot[static_cast<std::size_t>(m.pivot_col(r))] = true;
    for (int c = 0; c < cols.n; ++c) {
      if (!pivot[static_cast<std::size_t>(c)]) {
        masks[static_cast<std::size_t>(cols.refs[c].dim)] |= std::uint32_t{1} << cols.refs[c].digit;
      }
    }
  }
  return masks;
}

constexpr int LinearLayout::num_consecutive_in_out() const {
  if (num_in_ == 0 || num_out_ == 0) return 1;
  const DigitSystem& ids = in_[0].digits;
  const DigitSystem& ods = out_[0].digits;
  // Lowest digits of the first input dim that are the identity onto the
  // lowest digits of the first output dim.
  int consec = 0;
  while (consec < ids.num_digits() && consec < ods.num_digits() &&
         ids.radix(consec) == ods.radix(consec)) {
    const Image& img = images_[0][consec];
    bool unit = img[0] == ods.stride(consec);
    for (int j = 1; j < num_out_; ++j) unit = unit && img[j] == 0;
    if (!unit) break;
    ++consec;
  }
  // The lowest digit of the first output dim that any other image touches:
  // above it, L(a·V) and v never share a digit, so ⊕ is integer +.
  int low = ods.num_digits();
  for (int i = 0; i < num_in_; ++i) {
    for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
      if (i == 0 && k < consec) continue;
      const int v = images_[i][k][0];
      for (int q = 0; q < low && v != 0; ++q) {
        if (ods.digit(v, q) != 0) low = q;
      }
    }
  }
  return ids.stride(consec < low ? consec : low);
}

// ---- reshaping -----------------------------------------------------------------------

constexpr LinearLayout LinearLayout::transpose_ins(const NameList& order) const {
  const std::array<int, kMaxDims> perm = permutation("transpose_ins", "input", in_, num_in_, order);
  LinearLayout r = *this;
  for (int t = 0; t < num_in_; ++t) {
    r.in_[t] = in_[perm[t]];
    r.images_[t] = images_[perm[t]];
  }
  return r;
}

constexpr LinearLayout LinearLayout::transpose_outs(const NameList& order) const {
  const std::array<int, kMaxDims> perm =
      permutation("transpose_outs", "output", out_, num_out_, order);
  LinearLayout r = *this;
  for (int t = 0; t < num_out_; ++t) r.out_[t] = out_[perm[t]];
  for (int i = 0; i < num_in_; ++i) {
    for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
      for (int t = 0; t < num_out_; ++t) r.images_[i][k][t] = images_[i][k][perm[t]];
    }
  }
  return r;
}

constexpr Result<LinearLayout> LinearLayout::reshape_ins(const SizeList& dims) const {
  std::array<Dim, kMaxDims> nd{};
  std::array<int, kMaxDims + 1> start{};
  const Failure f = split_runs("reshape_ins", "input", in_, num_in_, dims, nd, start);
  if (!f.why.empty()) return f;
  const DigitList flat = all_digits(in_, num_in_);
  LinearLayout r;
  for (int j = 0; j < num_out_; ++j) r.add_out_dim(out_[j].name, out_[j].digits);
  for (int m = 0; m < dims.size(); ++m) {
    const int ri = r.add_in_dim(nd[m].name, nd[m].digits);
    for (int q = start[m]; q < start[m + 1]; ++q) {
      r.images_[ri][q - start[m]] = images_[flat.refs[q].dim][flat.refs[q].digit];
    }
  }
  return r;
}

constexpr Result<LinearLayout> LinearLayout::reshape_outs(const SizeList& dims) const {
  std::array<Dim, kMaxDims> nd{};
  std::array<int, kMaxDims + 1> start{};
  const Failure f = split_runs("reshape_outs", "output", out_, num_out_, dims, nd, start);
  if (!f.why.empty()) return f;
  const DigitList flat = all_digits(out_, num_out_);
  LinearLayout r;
  for (int i = 0; i < num_in_; ++i) r.add_in_dim(in_[i].name, in_[i].digits);
  for (int m = 0; m < dims.size(); ++m) r.add_out_dim(nd[m].name, nd[m].digits);
  for (int i = 0; i < num_in_; ++i) {
    for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
      // The image as flat output digits, then regrouped into the new dims.
      std::array<int, kMaxFlatDigits> fv{};
      int t = 0;
      for (int j = 0; j < num_out_; ++j) {
        const DigitSystem& ods = out_[j].digits;
        const DigitSystem::Digits d = ods.decompose(images_[i][k][j]);
        for (int q = 0; q < ods.num_digits(); ++q) fv[static_cast<std::size_t>(t++)] = d[q];
      }
      for (int m = 0; m < dims.size(); ++m) {
        int v = 0;
        for (int q = start[m + 1] - 1; q >= start[m]; --q) {
          v = v * out_[flat.refs[q].dim].digits.radix(flat.refs[q].digit) +
              fv[static_cast<std::size_t>(q)];
        }
        r.images_[i][k][m] = v;
      }
    }
  }
  return r;
}

constexpr LinearLayout LinearLayout::sublayout(const NameList& ins, const NameList& outs) const {
  for (const Name& n : ins) {
    if (in_dim_index(n) < 0) detail::throw_layout_error(Reason("sublayout: no input dim ") << n);
  }
  for (const Name& n : outs) {
    if (out_dim_index(n) < 0) detail::throw_layout_error(Reason("sublayout: no output dim ") << n);
  }
  LinearLayout r;
  std::array<int, kMaxDims> keep{};
  int nk = 0;
  for (int j = 0; j < num_out_; ++j) {
    if (!detail::listed(outs, out_[j].name)) continue;
    keep[nk++] = j;
    r.add_out_dim(out_[j].name, out_[j].digits);
  }
  for (int i = 0; i < num_in_; ++i) {
    if (!detail::listed(ins, in_[i].name)) continue;
    const int ri = r.add_in_dim(in_[i].name, in_[i].digits);
    for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
      for (int t = 0; t < nk; ++t) r.images_[ri][k][t] = images_[i][k][keep[t]];
    }
  }
  return r;
}

constexpr bool LinearLayout::sublayout_is_zero(const NameList& ins, const NameList& outs) const {
  const LinearLayout s = sublayout(ins, outs);
  for (int i = 0; i < s.num_in_; ++i) {
    for (int k = 0; k < s.in_[i].digits.num_digits(); ++k) {
      for (int j = 0; j < s.num_out_; ++j) {
        if (s.images_[i][k][j] != 0) return false;
      }
    }
  }
  return true;
}

constexpr Result<LinearLayout> LinearLayout::concat_ins(const LinearLayout& other) const {
  std::array<int, kMaxDims> map{};  // other's out dim j → this's out dim
  const Failure f =
      same_dims("concat_ins", "output", other.out_, other.num_out_, out_, num_out_, map);
  if (!f.why.empty()) return f;
  for (int i = 0; i < other.num_in_; ++i) {
    if (in_dim_index(other.in_[i].name) >= 0) {
      return Failure{Reason("concat_ins: input dim ")
                     << other.in_[i].name << " is in both layouts"};
    }
  }
  if (num_in_ + other.num_in_ > kMaxDims) {
    return Failure{Reason("concat_ins: ")
                   << num_in_ + other.num_in_ << " input dims exceed " << kMaxDims};
  }
  LinearLayout r = *this;
  for (int i = 0; i < other.num_in_; ++i) {
    const int ri = r.add_in_dim(other.in_[i].name, other.in_[i].digits);
    for (int k = 0; k < other.in_[i].digits.num_digits(); ++k) {
      for (int j = 0; j < other.num_out_; ++j) r.images_[ri][k][map[j]] = other.images_[i][k][j];
    }
  }
  const Reason why = r.total_size_problem();
  if (!why.empty()) return Failure{Reason("concat_ins: ") << why.view()};
  return r;
}

constexpr Result<LinearLayout> LinearLayout::concat_outs(const LinearLayout& other) const {
  std::array<int, kMaxDims> map{};  // other's in dim i → this's in dim
  const Failure f = same_dims("concat_outs", "input", other.in_, other.num_in_, in_, num_in_, map);
  if (!f.why.empty()) return f;
  for (int j = 0; j < other.num_out_; ++j) {
    if (out_dim_index(other.out_[j].name) >= 0) {
      return Failure{Reason("concat_outs: output dim ")
                     << other.out_[j].name << " is in both layouts"};
    }
  }
  if (num_out_ + other.num_out_ > kMaxDims) {
    return Failure{Reason("concat_outs: ")
                   << num_out_ + other.num_out_ << " output dims exceed " << kMaxDims};
  }
  LinearLayout r = *this;
  const int base = num_out_;
  for (int j = 0; j < other.num_out_; ++j) r.add_out_dim(other.out_[j].name, other.out_[j].digits);
  for (int i = 0; i < other.num_in_; ++i) {
    for (int k = 0; k < other.in_[i].digits.num_digits(); ++k) {
      for (int j = 0; j < other.num_out_; ++j) {
        r.images_[map[i]][k][base + j] = other.images_[i][k][j];
      }
    }
  }
  const Reason why = r.total_size_problem();
  if (!why.empty()) return Failure{Reason("concat_outs: ") << why.view()};
  return r;
}

constexpr Result<LinearLayout> LinearLayout::quotient(const NameList& dims) const {
  for (const Name& nm : dims) {
    const int i = in_dim_index(nm);
    const int j = out_dim_index(nm);
    Failure f;
    if (i < 0 || j < 0) {
      f.why << "quotient: " << nm << " is not both an input and an output dim";
      return f;
    }
    const DigitSystem& ids = in_[i].digits;
    const DigitSystem& ods = out_[j].digits;
    if (!(ids == ods)) {
      f.why << "quotient: dim " << nm << " has input digits " << ids << " but output digits " << ods
            << "; the quotient needs the identity on it";
      if (ids.size() == ods.size()) {
        f.kind = FailureKind::kDigitOrder;
        f.why << " (same size, different digit order: not a digit-wise linear map)";
      }
      return f;
    }
    for (int k = 0; k < ids.num_digits(); ++k) {
      for (int jj = 0; jj < num_out_; ++jj) {
        const int expected = jj == j ? ids.stride(k) : 0;
        const int v = images_[i][k][jj];
        if (v != expected) {
          f.why << "quotient: digit " << k << " of input dim " << nm << " maps to " << v
                << " in output dim " << out_[jj].name << "; the identity on " << nm
                << " maps it to " << expected;
          return f;
        }
      }
    }
  }
  NameList ins, outs;
  for (int i = 0; i < num_in_; ++i) {
    if (detail::listed(dims, in_[i].name)) continue;
    ins.push_back(in_[i].name);
    for (int k = 0; k < in_[i].digits.num_digits(); ++k) {
      for (const Name& nm : dims) {
        const int v = images_[i][k][out_dim_index(nm)];
        if (v != 0) {
          return Failure{Reason("quotient: digit ")
                         << k << " of input dim " << in_[i].name << " reaches output dim " << nm
                         << " (image " << v << "); the quotient needs " << nm
                         << " untouched by other inputs"};
        }
      }
    }
  }
  for (int j = 0; j < num_out_; ++j) {
    if (!detail::listed(dims, out_[j].name)) outs.push_back(out_[j].name);
  }
  return sublayout(ins, outs);
}

// ---- division ----------------------------------------------------------------------

constexpr Failure LinearLayout::match_divisor(const char* who, const LinearLayout& a, const LinearLayout& b, bool low,
                                              std::array<int, kMaxDims>& bin, std::array<int, kMaxDims>& bout) {
  bin.fill(-1);
  bout.fill(-1);
  auto match = [&](const char* role, const std::array<Dim, kMaxDims>& bd, int nb, const std::array<Dim, kMaxDims>& ad,
                   int na, std::array<int, kMaxDims>& map) -> Failure {
    for (int i = 0; i < nb; ++i) {
      int ia = -1;
      for (int k = 0; k < na; ++k)
        if (ad[static_cast<std::size_t>(k)].name == bd[static_cast<std::size_t>(i)].name) ia = k;
      if (ia < 0) {
        return Failure{Reason(who) << ": " << role << " dim " << bd[static_cast<std::size_t>(i)].name
                                   << " of the divisor is not an " << role << " dim of the dividend"};
      }
      const DigitSystem& mine = bd[static_cast<std::size_t>(i)].digits;
      const DigitSystem& theirs = ad[static_cast<std::size_t>(ia)].digits;
      if (!(low ? mine.is_prefix_of(theirs) : mine.is_suffix_of(theirs)))
        return detail::factor_mismatch(who, role, bd[static_cast<std::size_t>(i)].name, mine, theirs, low ? "lowest" : "highest");
      map[static_cast<std::size_t>(ia)] = i;
    }
    return Failure{};
  };
  if (Failure f = match("input", b.in_, b.num_in_, a.in_, a.num_in_, bin); !f.why.empty()) return f;
  return match("output", b.out_, b.num_out_, a.out_, a.num_out_, bout);
}

constexpr Result<LinearLayout> divide_left(const LinearLayout& a, const LinearLayout& b) {
  using LL = LinearLayout;
  std::array<int, kMaxDims> bin{}, bout{};  // a's in / out dim → b's, or -1
  if (Failure f = LinearLayout::match_divisor("divide_left", a, b, true, bin, bout); !f.why.empty()) return f;
  LL c;
  for (int ja = 0; ja < a.num_out_; ++ja) {
    const DigitSystem& ds = a.out_[ja].digits;
    const int nb = bout[ja] >= 0 ? b.out_[bout[ja]].digits.num_digits() : 0;
    c.add_out_dim(a.out_[ja].name, ds.slice(nb, ds.num_digits() - nb));
  }
  for (int ia = 0; ia < a.num_in_; ++ia) {
    const DigitSystem& ds = a.in_[ia].digits;
    const int nb = bin[ia] >= 0 ? b.in_[bin[ia]].digits.num_digits() : 0;
    c.add_in_dim(a.in_[ia].name, ds.slice(nb, ds.num_digits() - nb));
    for (int k = 0; k < ds.num_digits(); ++k) {
      for (int ja = 0; ja < a.num_out_; ++ja) {
        const int v = a.images_[ia][k][ja];
        const int jb = bout[ja];
        if (k < nb) {
          const int expected = jb >= 0 ? b.images_[bin[ia]][k][jb] : 0;
          if (v != expected) {
            return Failure{Reason("divide_left: digit ")
                           << k << " of input dim " << a.in_[ia].name << " maps to " << v
                           << " in output dim " << a.out_[ja].name << " but to " << expected
                           << " in the divisor: not a product with the divisor below"};
          }
        } else {
          const int s = jb >= 0 ? b.out_[jb].digits.size() : 1;
          if (v % s != 0) {
            return Failure{Reason("divide_left: digit ")
                           << k << " of input dim " << a.in_[ia].name << " maps to " << v
                           << " in output dim " << a.out_[ja].name
                           << ", touching the divisor's low digits (not a multiple of " << s
                           << "): not a product with the divisor below"};
          }
          c.images_[ia][k - nb][ja] = v / s;
        }
      }
    }
  }
  return c;
}

constexpr Result<LinearLayout> divide_right(const LinearLayout& a, const LinearLayout& b) {
  using LL = LinearLayout;
  std::array<int, kMaxDims> bin{}, bout{};  // a's in / out dim → b's, or -1
  if (Failure f = LinearLayout::match_divisor("divide_right", a, b, false, bin, bout); !f.why.empty()) return f;
  LL c;
  for (int ja = 0; ja < a.num_out_; ++ja) {
    const DigitSystem& ds = a.out_[ja].digits;
    const int nb = bout[ja] >= 0 ? b.out_[bout[ja]].digits.num_digits() : 0;
    c.add_out_dim(a.out_[ja].name, ds.prefix(ds.num_digits() - nb));
  }
  for (int ia = 0; ia < a.num_in_; ++ia) {
    const DigitSystem& ds = a.in_[ia].digits;
    const int nc = ds.num_digits() - (bin[ia] >= 0 ? b.in_[bin[ia]].digits.num_digits() : 0);
    c.add_in_dim(a.in_[ia].name, ds.prefix(nc));
    for (int k = 0; k < ds.num_digits(); ++k) {
      for (int ja = 0; ja < a.num_out_; ++ja) {
        const int v = a.images_[ia][k][ja];
        const int jb = bout[ja];
        const int sc = c.out_[ja].digits.size();
        if (k < nc) {
          if (jb >= 0 && v >= sc) {
            return Failure{Reason("divide_right: digit ")
                           << k << " of input dim " << a.in_[ia].name << " maps to " << v
                           << " in output dim " << a.out_[ja].name
                           << ", reaching the divisor's digits (>= " << sc
                           << "): not a product with the divisor above"};
          }
          c.images_[ia][k][ja] = v;
        } else {
          const int expected = jb >= 0 ? b.images_[bin[ia]][k - nc][jb] * sc : 0;
          if (v != expected) {
            return Failure{Reason("divide_right: digit ")
                           << k << " of input dim " << a.in_[ia].name << " maps to " << v
                           << " in output dim " << a.out_[ja].name << " but the divisor gives "
                           << expected << " (its image shifted by " << sc
                           << "): not a product with the divisor above"};
          }
        }
      }
    }
  }
  return c;
}

}  // namespace tilejit::layout
