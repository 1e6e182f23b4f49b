// tilejit/layout/fallback.hpp — the visible way out when the algebra is not closed:
// padding to powers of two, with masks, and a record of every time it happened.
//
// When padding is needed
// ----------------------
// Every layout operation keeps the digit order inside each dimension
// (linear_layout.hpp, "Where the algebra is not closed"). When a transform
// would need another order — reshaping 96 = [2,2,2,2,2,3] into (minor 3,
// major 32) is the standard example (fact 15) — it fails with
// FailureKind::kDigitOrder. With powers of two every digit order is the same
// order, so the caller's way out is to work on a tile padded to powers of
// two and mask the extra elements. Nothing here guesses: an operation either
// succeeds exactly or the fallback is taken *and recorded* in a Diagnostics,
// which the kernel compile reports (count and reasons) and tests can count.
//
// How a layout is padded: digit by digit
// --------------------------------------
// Each digit of radix p is replaced by b(p) binary digits, b(2) = 1,
// b(3) = 2, b(5) = b(7) = 3 — the fewest bits that hold 0..p-1. An index
// keeps its digits; only their encoding changes (digit value d is written
// in binary in its b(p) bits). Worked examples:
//
//   [2,2,2,2,2,3] (96) → [2,2,2,2,2 | 2,2] (128). The radix-3 digit is the top
//     one, so index i < 96 keeps its value: i = d0 + … + 16·d4 + 32·d5 and
//     d5 ∈ {0,1,2} is written as 32·d5 in bits 5–6. Valid indices are exactly
//     0..95: the mask is the *extent* 96.
//   [3,2,2,2,2,2] (96) → [2,2 | 2,2,2,2,2] (128). Index i = d0 + 3·rest becomes
//     d0 + 4·rest: valid padded indices are those whose two low bits are not 3
//     (96 of 128), and they are not a prefix. PaddedDim::pad / unpad /
//     is_valid say which is which.
//
// The padded layout P is the same map written in the padded digits: for a
// radix-p input digit with value d < p that L sends to value d of an output
// digit, P sends the binary encoding of d to the same encoding. That is
// linear over F_2 exactly when every radix-p block of L (p > 2) is a
// *monomial* map with coefficient 1: each radix-p output digit is reached by
// at most one input digit, which adds 1 to it (blocked, mma, wgmma and MFMA
// layouts are products of identities and qualify). Two radix-3 digits adding
// into one output digit (mod 3) have no power-of-two equivalent;
// pad_to_power_of_two reports that instead of guessing.
//
// Everything here is constexpr and heap-free.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "tilejit/layout/digits.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace tilejit::layout {

namespace detail {
/// Binary digits that hold one digit of radix p: 1, 2, 3, 3 for 2, 3, 5, 7.
constexpr int pad_bits(int p) { return p == 2 ? 1 : p == 3 ? 2 : 3; }
}  // namespace detail

/// One dimension before and after padding, and the index maps between them.
///
/// Invariants: padded is all radix 2 with Σ pad_bits(original radices)
/// digits; first_bit[k] is the padded digit where original digit k starts.
struct PaddedDim {
  Name name;
  DigitSystem original;
  DigitSystem padded;
  std::array<std::uint8_t, DigitSystem::kMaxDigits> first_bit{};

  /// The padding of dimension `name` with digits ds.
  [[nodiscard]] static constexpr PaddedDim of(Name name, const DigitSystem& ds) {
    PaddedDim d;
    d.name = name;
    d.original = ds;
    for (int k = 0; k < ds.num_digits(); ++k) {
      d.first_bit[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(d.padded.num_digits());
      for (int b = 0; b < detail::pad_bits(ds.radix(k)); ++b) d.padded.push_back(2);
    }
    return d;
  }

  [[nodiscard]] constexpr int original_size() const { return original.size(); }
  [[nodiscard]] constexpr int padded_size() const { return padded.size(); }
  /// True when padding changed nothing (all digits radix 2).
  [[nodiscard]] constexpr bool unchanged() const { return original.size() == padded.size(); }
  /// True when the valid padded indices are exactly 0..original_size()-1 and
  /// pad(i) == i: every digit but the top one has radix 2.
  [[nodiscard]] constexpr bool is_prefix() const {
    for (int k = 0; k + 1 < original.num_digits(); ++k) {
      if (original.radix(k) != 2) return false;
    }
    return true;
  }
  /// The valid extent (original_size()) when is_prefix(), else -1: then the
  /// mask is not a range and is_valid() must be asked.
  [[nodiscard]] constexpr int valid_extent() const { return is_prefix() ? original.size() : -1; }

  /// The padded index of original index i (each digit re-encoded in binary).
  /// Precondition: 0 <= i < original_size().
  [[nodiscard]] constexpr int pad(int i) const {
    const DigitSystem::Digits d = original.decompose(i);
    int v = 0;
    for (int k = 0; k < original.num_digits(); ++k) v += d[static_cast<std::size_t>(k)] << first_bit[static_cast<std::size_t>(k)];
    return v;
  }
  /// True when every digit group of padded index v encodes a value below its
  /// radix. Exactly original_size() of the padded_size() indices are valid.
  [[nodiscard]] constexpr bool is_valid(int v) const {
    if (v < 0 || v >= padded.size()) return false;
    for (int k = 0; k < original.num_digits(); ++k) {
      if (group(v, k) >= original.radix(k)) return false;
    }
    return true;
  }
  /// The original index of a valid padded index: unpad(pad(i)) == i.
  /// Throws LayoutError when v is not valid.
  [[nodiscard]] constexpr int unpad(int v) const {
    if (!is_valid(v)) {
      detail::throw_layout_error(Reason("unpad: padded index ")
                                 << v << " of dim " << name << " is masked (digits " << original
                                 << ")");
    }
    DigitSystem::Digits d{};
    for (int k = 0; k < original.num_digits(); ++k) d[static_cast<std::size_t>(k)] = group(v, k);
    return original.compose(d);
  }

 private:
  constexpr int group(int v, int k) const {
    const int b = detail::pad_bits(original.radix(k));
    return (v >> first_bit[static_cast<std::size_t>(k)]) & ((1 << b) - 1);
  }
};

/// Which padded indices hold real data: one PaddedDim per input and output
/// dimension of the layout that was padded (same order).
struct PadMask {
  std::array<PaddedDim, kMaxDims> ins{};
  std::array<PaddedDim, kMaxDims> outs{};
  int num_ins = 0;
  int num_outs = 0;

  /// The mask of a layout as it is (for a layout that needs no padding,
  /// every PaddedDim is unchanged()).
  [[nodiscard]] static constexpr PadMask of(const LinearLayout& l) {
    PadMask m;
    m.num_ins = l.num_in_dims();
    m.num_outs = l.num_out_dims();
    for (int i = 0; i < m.num_ins; ++i) m.ins[static_cast<std::size_t>(i)] = PaddedDim::of(l.in_name(i), l.in_digits(i));
    for (int j = 0; j < m.num_outs; ++j) m.outs[static_cast<std::size_t>(j)] = PaddedDim::of(l.out_name(j), l.out_digits(j));
    return m;
  }
  /// True when no dimension changed size.
  [[nodiscard]] constexpr bool trivial() const {
    for (int i = 0; i < num_ins; ++i) {
      if (!ins[static_cast<std::size_t>(i)].unchanged()) return false;
    }
    for (int j = 0; j < num_outs; ++j) {
      if (!outs[static_cast<std::size_t>(j)].unchanged()) return false;
    }
    return true;
  }
  /// Number of valid tile elements (the original total output size).
  [[nodiscard]] constexpr int valid_elements() const {
    int n = 1;
    for (int j = 0; j < num_outs; ++j) n *= outs[static_cast<std::size_t>(j)].original_size();
    return n;
  }
  /// Number of padded tile elements.
  [[nodiscard]] constexpr int padded_elements() const {
    int n = 1;
    for (int j = 0; j < num_outs; ++j) n *= outs[static_cast<std::size_t>(j)].padded_size();
    return n;
  }
  /// True when every output coordinate of the padded tile is valid.
  [[nodiscard]] constexpr bool element_valid(const Image& padded_coords) const {
    for (int j = 0; j < num_outs; ++j) {
      if (!outs[static_cast<std::size_t>(j)].is_valid(padded_coords[static_cast<std::size_t>(j)])) return false;
    }
    return true;
  }
  /// Original coordinates → padded coordinates, per output dim.
  [[nodiscard]] constexpr Image pad_out(const Image& coords) const {
    Image r{};
    for (int j = 0; j < num_outs; ++j) r[static_cast<std::size_t>(j)] = outs[static_cast<std::size_t>(j)].pad(coords[static_cast<std::size_t>(j)]);
    return r;
  }
  /// Original hardware coordinates → padded ones, per input dim.
  [[nodiscard]] constexpr Image pad_in(const Image& hw) const {
    Image r{};
    for (int i = 0; i < num_ins; ++i) r[static_cast<std::size_t>(i)] = ins[static_cast<std::size_t>(i)].pad(hw[static_cast<std::size_t>(i)]);
    return r;
  }
};

/// A padded layout and its mask. fell_back says whether a fallback produced
/// it; when false (try_or_pad's operation succeeded), layout is that
/// operation's exact result and mask is empty (no dims: nothing was padded).
struct Padded {
  LinearLayout layout;
  PadMask mask;
  bool fell_back = false;
};

/// The power-of-two equivalent of l (see the file comment).
///
/// Postconditions (on success):
/// * every input and output dim of the result has a power-of-two size, the
///   padded size of the same-named dim of l (mask.ins / mask.outs);
/// * for every input x of l: result.apply(mask.pad_in(x)) ==
///   mask.pad_out(l.apply(x)) — every valid element keeps its owner;
/// * exactly l.total_out_size() padded elements are valid; for a dim whose
///   non-binary digit (if any) is its top digit, they are the extent
///   0..size-1 (PaddedDim::valid_extent) and indices are unchanged.
/// Fails (kUnsatisfied) when a radix-p block (p > 2) is not monomial with
/// coefficient 1, naming the input digit, its image and the rule.
[[nodiscard]] constexpr Result<Padded> pad_to_power_of_two(const LinearLayout& l) {
  Padded out;
  out.mask = PadMask::of(l);
  const PadMask& m = out.mask;
  // Rule check: each non-binary output digit is reached by at most one input
  // digit, with coefficient 1.
  for (int j = 0; j < l.num_out_dims(); ++j) {
    const DigitSystem& ods = l.out_digits(j);
    for (int q = 0; q < ods.num_digits(); ++q) {
      if (ods.radix(q) == 2) continue;
      int hits = 0;
      for (int i = 0; i < l.num_in_dims(); ++i) {
        for (int k = 0; k < l.in_digits(i).num_digits(); ++k) {
          const int v = ods.digit(l.image(i, k)[static_cast<std::size_t>(j)], q);
          if (v == 0) continue;
          if (v != 1 || ++hits > 1) {
            Failure f;
            f.why << "pad_to_power_of_two: digit " << k << " of input dim " << l.in_name(i)
                  << " adds " << v << " to digit " << q << " of output dim " << l.out_name(j)
                  << " (radix " << ods.radix(q) << ")"
                  << (v != 1 ? " with a coefficient other than 1"
                             : ", which another input digit also reaches")
                  << "; sums modulo " << ods.radix(q)
                  << " have no power-of-two equivalent (rule: each non-binary output digit is "
                     "reached by at most one input digit, with coefficient 1)";
            return f;
          }
        }
      }
    }
  }
  LayoutBuilder b;
  for (int j = 0; j < m.num_outs; ++j) b.add_out_dim(m.outs[static_cast<std::size_t>(j)].name, m.outs[static_cast<std::size_t>(j)].padded);
  for (int i = 0; i < m.num_ins; ++i) {
    const PaddedDim& pin = m.ins[static_cast<std::size_t>(i)];
    const int bi = b.add_in_dim(pin.name, pin.padded);
    for (int k = 0; k < pin.original.num_digits(); ++k) {
      const Image img = l.image(i, k);
      const int bits = detail::pad_bits(pin.original.radix(k));
      for (int t = 0; t < bits; ++t) {
        // Input digit value 2^t (< radix): each reached output digit takes
        // the same value, i.e. bit t of its group.
        Image pimg{};
        for (int j = 0; j < m.num_outs; ++j) {
          const PaddedDim& po = m.outs[static_cast<std::size_t>(j)];
          const DigitSystem::Digits d = po.original.decompose(img[static_cast<std::size_t>(j)]);
          int v = 0;
          for (int q = 0; q < po.original.num_digits(); ++q) {
            if (d[static_cast<std::size_t>(q)] != 0) v |= 1 << (po.first_bit[static_cast<std::size_t>(q)] + t);
          }
          pimg[static_cast<std::size_t>(j)] = v;
        }
        b.set_image(bi, pin.first_bit[static_cast<std::size_t>(k)] + t, pimg);
      }
    }
  }
  const Result<LinearLayout> built = b.try_build();
  if (!built.ok()) return Failure{Reason("pad_to_power_of_two: ") << built.reason()};
  out.layout = built.value();
  return out;
}

// ---- diagnostics --------------------------------------------------------------------

/// Why a fallback was taken, as code can branch on it.
enum class FallbackRule : std::uint8_t {
  /// The exact result needs a different digit order inside a dimension
  /// (FailureKind::kDigitOrder): a permutation of elements, not a digit-wise
  /// linear map. Padding to powers of two makes every order coincide.
  kDigitOrder,
};

/// The rule's short name: "digit order".
[[nodiscard]] constexpr std::string_view rule_name(FallbackRule r) {
  switch (r) {
    case FallbackRule::kDigitOrder: return "digit order";
  }
  return "unknown rule";
}

/// The rule in words, for reports.
[[nodiscard]] constexpr std::string_view rule_text(FallbackRule r) {
  switch (r) {
    case FallbackRule::kDigitOrder:
      return "digit order (the exact result reorders the digits of a dimension: a permutation "
             "of elements, not a digit-wise linear map; in powers of two all orders coincide)";
  }
  return "unknown rule";
}

/// A short fixed-capacity label (an operation name).
using OpLabel = std::array<char, 32>;

/// One fallback: which operation, which dims (with their digits and sizes
/// before and after), which rule, and the operation's own failure reason.
struct FallbackRecord {
  OpLabel op{};
  FallbackRule rule = FallbackRule::kDigitOrder;
  /// The output dims that were padded (those whose size changed).
  std::array<PaddedDim, kMaxDims> dims{};
  int num_dims = 0;
  /// The failing operation's reason (names its dim, digits and rule).
  Reason why;

  [[nodiscard]] constexpr std::string_view op_name() const {
    std::size_t n = 0;
    while (n < op.size() && op[n] != '\0') ++n;
    return std::string_view(op.data(), n);
  }
  /// One line: "reshape_outs fell back to padding (rule: digit order): dim
  /// "dim0" digits [2,2,2,2,2,3] padded 96 -> 128 (96 valid); because: ..."
  /// (cut with "..." past Reason::kCapacity; rule_text(rule) has the rule
  /// in full).
  [[nodiscard]] constexpr Reason text() const {
    Reason r;
    r << op_name() << " fell back to padding (rule: " << rule_name(rule) << "):";
    for (int d = 0; d < num_dims; ++d) {
      const PaddedDim& pd = dims[static_cast<std::size_t>(d)];
      r << (d == 0 ? " dim " : ", dim ") << pd.name << " digits " << pd.original << " padded "
        << pd.original_size() << " -> " << pd.padded_size() << " (" << pd.original_size()
        << " valid)";
    }
    r << "; because: " << why.view();
    return r;
  }
};

/// Every fallback taken while building a kernel's layouts: a fixed-capacity
/// log, constexpr-friendly. count() counts all fallbacks; the first
/// kCapacity are kept in full (dropped() says how many were not).
class Diagnostics {
 public:
  static constexpr int kCapacity = 16;

  constexpr void append(const FallbackRecord& r) {
    if (stored_ < kCapacity) records_[static_cast<std::size_t>(stored_++)] = r;
    ++count_;
  }
  /// Number of fallbacks recorded (kept or not).
  [[nodiscard]] constexpr int count() const { return count_; }
  /// Number of records kept: min(count(), kCapacity).
  [[nodiscard]] constexpr int size() const { return stored_; }
  [[nodiscard]] constexpr int dropped() const { return count_ - stored_; }
  [[nodiscard]] constexpr bool empty() const { return count_ == 0; }
  /// Record i, 0 <= i < size(). Throws LayoutError otherwise.
  [[nodiscard]] constexpr const FallbackRecord& operator[](int i) const {
    if (i < 0 || i >= stored_) {
      detail::throw_layout_error(Reason("Diagnostics: record ") << i << " of " << stored_);
    }
    return records_[static_cast<std::size_t>(i)];
  }
  /// The text of record i (FallbackRecord::text).
  [[nodiscard]] constexpr Reason reason(int i) const { return (*this)[i].text(); }

 private:
  std::array<FallbackRecord, kCapacity> records_{};
  int stored_ = 0;
  int count_ = 0;
};

/// Runs op(input) — an operation returning Result<LinearLayout> — and:
/// * on success returns its layout with an empty mask, fell_back = false,
///   and records nothing;
/// * on a kDigitOrder failure pads `input` (pad_to_power_of_two), appends a
///   FallbackRecord (op_name, the padded dims, the rule, op's reason) to diag
///   and returns the padded input with its mask, fell_back = true. The
///   operation itself was *not* applied: its exact result does not exist in
///   these digit systems, so the caller redoes it on the padded tile, where
///   every digit order is the same order (or plans a data movement);
/// * on any other failure (padding would not help: not surjective, sizes do
///   not match, ...) returns that failure and records nothing; likewise if
///   the padding itself is impossible (its reason is appended to op's).
template <class Op>
[[nodiscard]] constexpr Result<Padded> try_or_pad(Diagnostics& diag, std::string_view op_name,
                                                  const LinearLayout& input, Op&& op) {
  const Result<LinearLayout> r = std::forward<Op>(op)(input);
  if (r.ok()) {
    Padded p;
    p.layout = r.value();
    return p;
  }
  if (!r.needs_digit_reorder()) return Failure{Reason(r.reason()), r.kind()};
  Result<Padded> padded = pad_to_power_of_two(input);
  if (!padded.ok()) {
    return Failure{Reason(op_name) << " needed a fallback (" << r.reason()
                                   << ") but padding is impossible: " << padded.reason()};
  }
  Padded p = std::move(padded).value();
  p.fell_back = true;
  FallbackRecord rec;
  for (std::size_t c = 0; c < op_name.size() && c + 1 < rec.op.size(); ++c) rec.op[c] = op_name[c];
  rec.rule = FallbackRule::kDigitOrder;
  for (int j = 0; j < p.mask.num_outs; ++j) {
    const PaddedDim& pd = p.mask.outs[static_cast<std::size_t>(j)];
    if (!pd.unchanged()) rec.dims[static_cast<std::size_t>(rec.num_dims++)] = pd;
  }
  rec.why = Reason(r.reason());
  diag.append(rec);
  return p;
}

}  // namespace tilejit::layout
