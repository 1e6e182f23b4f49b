// The padding fallback (fallback.hpp): fact 15 end to end, padding keeps
// every valid element's owner, the mask is exact, and the diagnostics count
// and explain every fallback.
#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/encodings/encodings.hpp"
#include "tilejit/layout/fallback.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

constexpr LL kLanesMinor =
    LL::identity1D(32, "lane", "dim0") * LL::identity1D(3, "register", "dim0");
constexpr LL kRegMinor = LL::identity1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0");

constexpr auto kReshape3x32 = [](const LL& l) {
  return l.reshape_outs({{"minor", 3}, {"major", 32}});
};

// Fact 15 at compile time: one fallback, 128 padded, 96 valid.
constexpr bool fact15_at_compile_time() {
  Diagnostics diag;
  const Result<Padded> r = try_or_pad(diag, "reshape_outs", LL::identity1D(96, "i", "dim0"),
                                      kReshape3x32);
  return r.ok() && r.value().fell_back && r.value().layout.out_size(0) == 128 &&
         r.value().mask.outs[0].valid_extent() == 96 && diag.count() == 1;
}
static_assert(fact15_at_compile_time());
static_assert(pad_to_power_of_two(kLanesMinor).value().layout.in_size(1) == 4);  // 3 registers → 4

TEST_CASE("fallback_fact15_reshape_pads_to_128_with_96_valid") {
  const LL l = LL::identity1D(96, "i", "dim0");  // digits [2,2,2,2,2,3]
  REQUIRE(l.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  Diagnostics diag;
  const Result<Padded> r = try_or_pad(diag, "reshape_outs", l, kReshape3x32);
  REQUIRE_MESSAGE(r.ok(), r.reason());
  const Padded& p = r.value();
  CHECK(p.fell_back);
  CHECK(p.layout.out_size(0) == 128);
  CHECK(p.layout.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 2, 2});
  CHECK(p.mask.outs[0].valid_extent() == 96);
  CHECK(p.mask.valid_elements() == 96);
  CHECK(p.mask.padded_elements() == 128);
  for (int i = 0; i < 128; ++i) CHECK(p.mask.outs[0].is_valid(i) == (i < 96));
  for (int i = 0; i < 96; ++i) CHECK(p.layout.apply({i})[0] == i);  // owners unchanged

  CHECK(diag.count() == 1);
  CHECK(diag.size() == 1);
  const FallbackRecord& rec = diag[0];
  CHECK(rec.op_name() == "reshape_outs");
  CHECK(rec.rule == FallbackRule::kDigitOrder);
  REQUIRE(rec.num_dims == 1);
  CHECK(rec.dims[0].name == Name("dim0"));
  CHECK(rec.dims[0].original == DigitSystem{2, 2, 2, 2, 2, 3});
  const Reason text = diag.reason(0);
  CHECK(contains(text.view(), "reshape_outs fell back to padding (rule: digit order)"));
  CHECK(contains(text.view(), "dim \"dim0\" digits [2,2,2,2,2,3] padded 96 -> 128 (96 valid)"));
  CHECK(contains(rule_text(rec.rule), "permutation of elements"));
  CHECK(contains(text.view(), "\"minor\" of size 3"));  // the reshape's own reason
  MESSAGE(text.view());
}

TEST_CASE("fallback_success_and_other_failures_record_nothing") {
  Diagnostics diag;
  const LL l = LL::identity1D(96, "i", "dim0");
  // (minor 32, major 3) is representable: no fallback.
  const Result<Padded> ok =
      try_or_pad(diag, "reshape_outs", l, [](const LL& x) { return x.reshape_outs({{"minor", 32}, {"major", 3}}); });
  REQUIRE(ok.ok());
  CHECK(!ok.value().fell_back);
  CHECK(ok.value().layout.out_size(1) == 3);
  CHECK(ok.value().mask.num_outs == 0);
  // Wrong total size: padding would not help; the failure is passed on.
  const Result<Padded> bad =
      try_or_pad(diag, "reshape_outs", l, [](const LL& x) { return x.reshape_outs({{"a", 5}, {"b", 32}}); });
  CHECK(!bad.ok());
  CHECK(bad.kind() == FailureKind::kUnsatisfied);
  CHECK(contains(bad.reason(), "160"));
  CHECK(diag.count() == 0);
  CHECK(diag.empty());
}

TEST_CASE("fallback_digit_order_in_compose_and_reshape_ins") {
  Diagnostics diag;
  // fact 12's change of digit order, met by invert_and_compose
  const Result<Padded> a = try_or_pad(diag, "invert_and_compose", kRegMinor,
                                      [](const LL& x) { return kLanesMinor.invert_and_compose(x); });
  REQUIRE(a.ok());
  CHECK(a.value().fell_back);
  CHECK(a.value().mask.outs[0].valid_extent() == -1);  // [3,2,...] pads to a non-prefix mask
  const Result<Padded> b = try_or_pad(diag, "reshape_ins", kLanesMinor, [](const LL& x) {
    return x.flatten_ins().reshape_ins({{"a", 3}, {"b", 32}});  // ins [2,2,2,2,2,3]
  });
  REQUIRE(b.ok());
  CHECK(b.value().fell_back);
  CHECK(diag.count() == 2);
  CHECK(diag[0].op_name() == "invert_and_compose");
  CHECK(contains(diag.reason(0).view(), "[3,2,2,2,2,2]"));
  CHECK(diag[1].op_name() == "reshape_ins");
}

// ---- pad_to_power_of_two ---------------------------------------------------------------

/// Every input x of l: padded(pad_in(x)) == pad_out(l(x)), a valid element;
/// the valid padded elements are exactly the padded originals.
void check_padding(const LL& l) {
  CAPTURE(l.to_string());
  const Result<Padded> r = pad_to_power_of_two(l);
  REQUIRE_MESSAGE(r.ok(), r.reason());
  const Padded& p = r.value();
  const PadMask& m = p.mask;
  REQUIRE(p.layout.num_in_dims() == l.num_in_dims());
  REQUIRE(p.layout.num_out_dims() == l.num_out_dims());
  for (int i = 0; i < l.num_in_dims(); ++i) {
    CHECK(p.layout.in_digits(i).count(2) == p.layout.in_digits(i).num_digits());
    CHECK(p.layout.in_size(i) == m.ins[static_cast<std::size_t>(i)].padded_size());
  }
  for (int j = 0; j < l.num_out_dims(); ++j) {
    CHECK(p.layout.out_digits(j).count(2) == p.layout.out_digits(j).num_digits());
  }
  // owners kept
  const int n_in = l.total_in_size();
  for (int f = 0; f < n_in; ++f) {
    Image x{};
    int rest = f;
    for (int i = 0; i < l.num_in_dims(); ++i) {
      x[static_cast<std::size_t>(i)] = rest % l.in_size(i);
      rest /= l.in_size(i);
    }
    const Image want = m.pad_out(l.apply(x));
    CHECK(m.element_valid(want));
    CHECK(p.layout.apply(m.pad_in(x)) == want);
  }
  // the mask is exact, per dim: valid ⇔ the padding of an original index
  for (int j = 0; j < m.num_outs; ++j) {
    const PaddedDim& pd = m.outs[static_cast<std::size_t>(j)];
    std::vector<int> hit(static_cast<std::size_t>(pd.padded_size()), 0);
    for (int i = 0; i < pd.original_size(); ++i) {
      const int v = pd.pad(i);
      ++hit[static_cast<std::size_t>(v)];
      CHECK(pd.unpad(v) == i);
      if (pd.is_prefix()) CHECK(v == i);
    }
    int valid = 0;
    for (int v = 0; v < pd.padded_size(); ++v) {
      CHECK(pd.is_valid(v) == (hit[static_cast<std::size_t>(v)] == 1));
      valid += pd.is_valid(v) ? 1 : 0;
    }
    CHECK(valid == pd.original_size());
    if (pd.is_prefix()) CHECK(pd.valid_extent() == pd.original_size());
  }
  CHECK(m.valid_elements() == l.total_out_size());
}

TEST_CASE("fallback_pad_keeps_owners_and_exact_masks") {
  check_padding(kLanesMinor);  // [2,2,2,2,2,3]: extent 96
  check_padding(kRegMinor);    // [3,2,2,2,2,2]: low digit padded, a non-prefix mask
  check_padding(wgmma_accumulator(96));
  check_padding(wgmma_accumulator(40));  // radix 5
  check_padding(mma_sync_accumulator({48, 24}, {1, 1}));
  check_padding(blocked({24, 96}, {1, 3}, {4, 8}, {2, 2}, {1, 0}));
  check_padding(blocked({7, 16}, {7, 1}, {4, 8}, {1, 1}, {0, 1}));  // radix 7, broadcast lanes
  check_padding(blocked_1d(128, 4));  // already a power of two: unchanged
  const Padded same = pad_to_power_of_two(blocked_1d(128, 4)).value();
  CHECK(same.layout == blocked_1d(128, 4));
  CHECK(same.mask.trivial());
}

TEST_CASE("fallback_pad_fact11_owner_by_hand") {
  // Fact 11: lane 5, register 2 holds element 17 = 2 + 3·5. Padded, register 2
  // stays register 2 (binary 10) and element 17 becomes 2 + 4·5 = 22.
  const Padded p = pad_to_power_of_two(kRegMinor).value();
  CHECK(p.mask.outs[0].pad(17) == 22);
  CHECK(p.layout.apply({{"lane", 5}, {"register", 2}})[0] == 22);
  // register 3 (bits 11) is masked and lands on masked elements
  CHECK(!p.mask.ins[0].is_valid(3));
  CHECK(!p.mask.outs[0].is_valid(p.layout.apply({{"lane", 5}, {"register", 3}})[0]));
}

TEST_CASE("fallback_pad_rejects_sums_modulo_three") {
  // Two radix-3 inputs adding into one radix-3 output digit: (r + l) mod 3.
  const LL sum = LL::from_images({{"register", {3}, {{1}}}, {"lane", {3}, {{1}}}}, {{"dim0", {3}}});
  const Result<Padded> r = pad_to_power_of_two(sum);
  REQUIRE(!r.ok());
  CHECK(contains(r.reason(), "another input digit"));
  CHECK(contains(r.reason(), "modulo 3"));
  // coefficient 2
  const LL twice = LL::from_images({{"register", {3}, {{2}}}}, {{"dim0", {3}}});
  CHECK(contains(pad_to_power_of_two(twice).reason(), "coefficient"));
  // Through try_or_pad: a digit-order failure whose padding is impossible
  // fails, naming both reasons, and records nothing.
  const LL sum2 = LL::from_images({{"register", {3}, {{2}}}, {"lane", {3}, {{2}}}}, {{"dim0", {2, 3}}});
  Diagnostics diag;
  const Result<Padded> t = try_or_pad(diag, "reshape_outs", sum2, [](const LL& x) {
    return x.reshape_outs({{"a", 3}, {"b", 2}});
  });
  REQUIRE(!t.ok());
  CHECK(contains(t.reason(), "reshape_outs needed a fallback"));
  CHECK(contains(t.reason(), "padding is impossible"));
  CHECK(diag.count() == 0);
}

TEST_CASE("fallback_diagnostics_capacity_and_count") {
  Diagnostics diag;
  const LL l = LL::identity1D(96, "i", "dim0");
  for (int n = 0; n < Diagnostics::kCapacity + 4; ++n) {
    const Result<Padded> r = try_or_pad(diag, "reshape_outs", l, kReshape3x32);
    CHECK(r.ok());
  }
  CHECK(diag.count() == Diagnostics::kCapacity + 4);
  CHECK(diag.size() == Diagnostics::kCapacity);
  CHECK(diag.dropped() == 4);
  CHECK_THROWS_AS((void)diag[Diagnostics::kCapacity], LayoutError);
  CHECK(contains(diag.reason(Diagnostics::kCapacity - 1).view(), "96 -> 128"));
}

}  // namespace
