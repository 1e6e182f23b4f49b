// The layout algebra, one fact per TEST_CASE: each operation on a small
// example whose answer can be checked by hand, its failure reasons, and a
// compile-time block showing every new operation usable in constant
// expressions. Random layouts against a brute-force oracle are in
// test_properties.cpp.
#include <doctest/doctest.h>

#include <string_view>

#include "tilejit/layout/digits.hpp"
#include "tilejit/layout/fp_matrix.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// 96 floats: 3 registers minor x 32 lanes (fact 11), and lanes minor (fact 12).
constexpr LL kRegMinor = LL::identity1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0");
constexpr LL kLanesMinor =
    LL::identity1D(32, "lane", "dim0") * LL::identity1D(3, "register", "dim0");

// ---- compile time: the new operations are constexpr ------------------------------

static_assert(kRegMinor.rank(2) == 5 && kRegMinor.rank(3) == 1 && kRegMinor.rank(5) == 0);
static_assert(kRegMinor.is_invertible());
static_assert(kRegMinor.num_consecutive_in_out() == 3);  // 3 registers, 3 consecutive elements
static_assert(kRegMinor.pseudoinvert().value().apply({17}) == Image{2, 5, 0, 0});
static_assert(kRegMinor.flatten_ins().in_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
static_assert(kRegMinor.flatten_ins().apply({17})[0] == 17);
static_assert(kRegMinor.transpose_ins({"lane", "register"}).apply({5, 2})[0] == 17);
static_assert(kRegMinor.sublayout({"lane"}, {"dim0"}).out_size(0) == 96);
// fact 15, algebra half: (minor 3, major 32) of [2,2,2,2,2,3] needs a new digit order.
static_assert(kLanesMinor.reshape_outs({{"minor", 3}, {"major", 32}}).needs_digit_reorder());
static_assert(kLanesMinor.reshape_outs({{"minor", 32}, {"major", 3}}).ok());
static_assert(divide_right(kRegMinor, LL::identity1D(32, "lane", "dim0")).value() ==
              LL::identity1D(3, "register", "dim0") * LL::identity1D(1, "lane", "dim0"));
static_assert(divide_left(kRegMinor, LL::identity1D(3, "register", "dim0")).value() ==
              LL::identity1D(1, "register", "dim0") * LL::identity1D(32, "lane", "dim0"));
static_assert((LL::identity1D(4, "block", "block") * kRegMinor).quotient({"block"}).value() ==
              kRegMinor);
static_assert((LL::zeros1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0"))
                  .free_variable_masks()[0] == 1u);
static_assert(LL::identity1D(32, "lane", "dim0")
                  .invert_and_compose(LL::zeros1D(3, "register", "dim0") *
                                      LL::identity1D(32, "lane", "dim0"))
                  .value()
                  .apply({7}) == Image{0, 7, 0, 0});
static_assert(
    LL::identity1D(3, "r", "x").concat_ins(LL::zeros1D(2, "w", "x", 3)).value().apply({2, 1})[0] ==
    2);

}  // namespace

// ---- transpose ----------------------------------------------------------------------

TEST_CASE("transpose_ins_keeps_the_map") {
  const LL l = LL::from_images(
      {{"in1", {2, 2, 2}, {{4, 2}, {2, 1}, {1, 0}}}, {"in2", {2, 2}, {{1, 2}, {2, 1}}}},
      {{"out1", {2, 2, 2}}, {"out2", {2, 2}}});
  const LL t = l.transpose_ins({"in2", "in1"});
  CHECK(t.in_name(0) == Name("in2"));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 4; ++b) CHECK(t.apply({b, a}) == l.apply({a, b}));
  }
  CHECK(t.transpose_ins({"in1", "in2"}) == l);
  CHECK_THROWS_AS((void)l.transpose_ins({"in1"}), LayoutError);
  CHECK_THROWS_AS((void)l.transpose_ins({"in1", "nope"}), LayoutError);
  CHECK_THROWS_AS((void)l.transpose_ins({"in1", "in1"}), LayoutError);
}

TEST_CASE("transpose_outs_permutes_images") {
  const LL l = LL::identity1D(3, "r", "x") * LL::identity1D(4, "l", "y");
  const LL t = l.transpose_outs({"y", "x"});
  CHECK(t.out_name(0) == Name("y"));
  CHECK(t.out_digits(1) == DigitSystem{3});
  for (int r = 0; r < 3; ++r) {
    for (int ln = 0; ln < 4; ++ln) CHECK(t.apply({r, ln}) == Image{ln, r, 0, 0});
  }
  CHECK(t.transpose_outs({"x", "y"}) == l);
}

// ---- reshape and flatten -------------------------------------------------------------

TEST_CASE("reshape_ins_mixed_radix_runs") {
  // flattened input digits [3,2,2,2,2,2]: runs of size 6 = [3,2] and 16 = [2,2,2,2]
  const auto r = kRegMinor.reshape_ins({{"a", 6}, {"b", 16}});
  REQUIRE_MESSAGE(r.ok(), r.reason());
  CHECK(r.value().in_digits(0) == DigitSystem{3, 2});
  CHECK(r.value().in_digits(1) == DigitSystem{2, 2, 2, 2});
  for (int f = 0; f < 96; ++f) {
    CHECK(r.value().apply({f % 6, f / 6}) == kRegMinor.apply({f % 3, f / 3}));
  }
  CHECK(r.value().reshape_ins({{"register", 3}, {"lane", 32}}).value() == kRegMinor);
}

TEST_CASE("reshape_ins_needs_digit_order") {
  // size 2 cannot start the flattened digits [3,2,2,2,2,2]
  const auto r = kRegMinor.reshape_ins({{"a", 2}, {"b", 48}});
  REQUIRE(!r.ok());
  CHECK(r.kind() == FailureKind::kDigitOrder);
  CHECK(r.needs_digit_reorder());
  CHECK(contains(r.reason(), "\"a\" of size 2"));
  CHECK(contains(r.reason(), "[3,2,2,2,2,2]"));
  CHECK(contains(r.reason(), "digit order"));
  // wrong total or a repeated name: not a digit-order problem
  const auto total = kRegMinor.reshape_ins({{"a", 96}, {"b", 2}});
  CHECK(!total.ok());
  CHECK(total.kind() == FailureKind::kUnsatisfied);
  CHECK(contains(total.reason(), "192"));
  const auto dup = kRegMinor.reshape_ins({{"a", 3}, {"a", 32}});
  CHECK(!dup.ok());
  CHECK(dup.kind() == FailureKind::kUnsatisfied);
}

TEST_CASE("reshape_outs_fact15_is_not_representable") {  // fact 15, the algebra's half
  const LL l = LL::identity1D(96, "i", "dim0");          // digits [2,2,2,2,2,3]
  const auto r = l.reshape_outs({{"minor", 3}, {"major", 32}});
  REQUIRE(!r.ok());
  CHECK(r.needs_digit_reorder());
  CHECK(contains(r.reason(), "\"minor\""));
  CHECK(contains(r.reason(), "[2,2,2,2,2,3]"));
  CHECK(contains(r.reason(), "pad to a power of two"));
  CHECK(l.reshape_ins({{"minor", 3}, {"major", 32}}).needs_digit_reorder());
  // the representable split: 32 minor, 3 major
  const auto ok = l.reshape_outs({{"minor", 32}, {"major", 3}});
  REQUIRE_MESSAGE(ok.ok(), ok.reason());
  for (int i = 0; i < 96; ++i) CHECK(ok.value().apply({i}) == Image{i % 32, i / 32, 0, 0});
}

TEST_CASE("reshape_outs_and_flatten_outs_mixed_radix") {
  const LL l = LL::identity1D(3, "r", "x") * LL::identity1D(4, "l", "y");
  const LL f = l.flatten_outs();
  REQUIRE(f.num_out_dims() == 1);
  CHECK(f.out_digits(0) == DigitSystem{3, 2, 2});
  CHECK(f.image(0, 0)[0] == 1);
  CHECK(f.image(1, 0)[0] == 3);
  CHECK(f.image(1, 1)[0] == 6);
  CHECK(f.reshape_outs({{"x", 3}, {"y", 4}}).value() == l);
  const LL fi = l.flatten_ins();
  CHECK(fi.in_name(0) == Name("r"));
  CHECK(fi.in_digits(0) == DigitSystem{3, 2, 2});
  CHECK(LL().flatten_ins() == LL());
}

// ---- sublayout -------------------------------------------------------------------------

TEST_CASE("sublayout_keeps_npot_output_sizes") {
  const LL s = kRegMinor.sublayout({"lane"}, {"dim0"});
  REQUIRE(s.num_in_dims() == 1);
  CHECK(s.in_name(0) == Name("lane"));
  CHECK(s.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});  // not cut to the 32 lanes reach
  for (int k = 0; k < 5; ++k) CHECK(s.image(0, k)[0] == 3 << k);
  const LL none = kRegMinor.sublayout({}, {"dim0"});
  CHECK(none.num_in_dims() == 0);
  CHECK(none.out_size(0) == 96);
  CHECK_THROWS_AS((void)kRegMinor.sublayout({"warp"}, {"dim0"}), LayoutError);
  CHECK_THROWS_AS((void)kRegMinor.sublayout({"lane"}, {"dim1"}), LayoutError);
}

TEST_CASE("sublayout_is_zero_per_pair") {
  const LL l = LL::identity1D(4, "in", "out1") * LL::identity1D(8, "in2", "out2");
  CHECK(l.sublayout_is_zero({"in"}, {"out2"}));
  CHECK(!l.sublayout_is_zero({"in"}, {"out1"}));
  CHECK(l.sublayout_is_zero({}, {"out1", "out2"}));
  CHECK(!l.sublayout_is_zero({"in", "in2"}, {"out2"}));
}

// ---- concat --------------------------------------------------------------------------------

TEST_CASE("concat_ins_side_by_side") {
  const LL a = LL::from_images({{"register", {3}, {{1}}}}, {{"dim0", {3, 2, 2}}});
  const LL b = LL::from_images({{"lane", {2, 2}, {{3}, {6}}}}, {{"dim0", {3, 2, 2}}});
  const auto c = a.concat_ins(b);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  CHECK(c.value() == LL::identity1D(3, "register", "dim0") * LL::identity1D(4, "lane", "dim0"));
  // same size, other digit order: not closed
  const LL b2 = LL::from_images({{"lane", {2, 2}, {{1}, {2}}}}, {{"dim0", {2, 2, 3}}});
  const auto bad = a.concat_ins(b2);
  REQUIRE(!bad.ok());
  CHECK(bad.needs_digit_reorder());
  CHECK(contains(bad.reason(), "[3,2,2]"));
  CHECK(contains(bad.reason(), "[2,2,3]"));
  CHECK(!a.concat_ins(a).ok());  // the same input dim twice
}

TEST_CASE("concat_outs_pairs_outputs") {
  const LL a = LL::identity1D(4, "in", "x");
  const LL b = LL::from_images({{"in", {2, 2}, {{1}, {0}}}}, {{"y", {2}}});
  const auto c = a.concat_outs(b);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  CHECK(c.value().image(0, 0) == Image{1, 1, 0, 0});
  CHECK(c.value().image(0, 1) == Image{2, 0, 0, 0});
  for (int i = 0; i < 4; ++i) CHECK(c.value().apply({i}) == Image{i, i % 2, 0, 0});
  CHECK(!a.concat_outs(LL::identity1D(8, "in", "y")).ok());  // input sizes differ
}

// ---- division ------------------------------------------------------------------------------

TEST_CASE("divide_left_peels_low_factor") {
  const LL b = LL::identity1D(3, "register", "dim0");
  const auto c = divide_left(kRegMinor, b);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  CHECK(c.value().in_digits(0).num_digits() == 0);  // register: all digits were B's
  CHECK(c.value().in_digits(1) == DigitSystem{2, 2, 2, 2, 2});
  CHECK(b * c.value() == kRegMinor);
  // wrong low digits: [2] is not the bottom of [3]; of [3,2] it is a reorder
  CHECK(!divide_left(kRegMinor, LL::identity1D(2, "register", "dim0")).ok());
  const auto order =
      divide_left(LL::identity1D(DigitSystem{3, 2}, "i", "o"), LL::identity1D(2, "i", "o"));
  REQUIRE(!order.ok());
  CHECK(order.needs_digit_reorder());
  // images that differ from the divisor's
  const auto img = divide_left(kRegMinor, LL::zeros1D(3, "register", "dim0", 3));
  REQUIRE(!img.ok());
  CHECK(img.kind() == FailureKind::kUnsatisfied);
  CHECK(contains(img.reason(), "digit 0 of input dim \"register\""));
}

TEST_CASE("divide_right_peels_high_factor") {
  const LL b = LL::identity1D(32, "lane", "dim0");
  const auto c = divide_right(kRegMinor, b);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  CHECK(c.value() * b == kRegMinor);
  CHECK(c.value().out_digits(0) == DigitSystem{3});
  // lanes minor: the top of dim0 is the register's radix-3 digit, not lanes
  CHECK(!divide_right(kLanesMinor, b).ok());
  const auto top = divide_right(kLanesMinor, LL::identity1D(3, "register", "dim0"));
  REQUIRE_MESSAGE(top.ok(), top.reason());
  CHECK(top.value() * LL::identity1D(3, "register", "dim0") == kLanesMinor);
  // divisor dim missing in the dividend
  CHECK(!divide_right(kRegMinor, LL::identity1D(2, "warp", "dim0")).ok());
}

// ---- quotient -------------------------------------------------------------------------------

TEST_CASE("quotient_removes_identity_dims") {
  const LL l = LL::identity1D(4, "block", "block") * kRegMinor;
  const auto q = l.quotient({"block"});
  REQUIRE_MESSAGE(q.ok(), q.reason());
  CHECK(q.value() == kRegMinor);
  // block digit 0 also moves dim0: not the identity on block alone
  LayoutBuilder b;
  const int blk = b.add_in_dim("block", {2, 2});
  b.add_out_dim("block", {2, 2});
  b.add_out_dim("dim0", {2});
  b.set_image(blk, 0, Image{1, 1}).set_image(blk, 1, Image{2, 0});
  const auto bad = b.build().quotient({"block"});
  REQUIRE(!bad.ok());
  CHECK(contains(bad.reason(), "digit 0 of input dim \"block\" maps to 1 in output dim \"dim0\""));
  // input digits [3,2], output digits [2,3]: same size, different order
  const LL swap = LL::from_images({{"x", {3, 2}, {{2}, {1}}}}, {{"x", {2, 3}}});
  REQUIRE(swap.is_bijective());
  CHECK(swap.quotient({"x"}).needs_digit_reorder());
  CHECK(!kRegMinor.quotient({"lane"}).ok());  // lane is not an output dim
}

// ---- free variables, rank, inverses ---------------------------------------------------------

TEST_CASE("free_variable_masks_dependent_digits") {
  // lane digit 1 repeats digit 0: free; radix-3 digit 1 is 2 x digit 0: free.
  const LL l = LL::from_images(
      {{"lane", {2, 2, 2}, {{1, 0}, {1, 0}, {2, 0}}}, {"r", {3, 3}, {{0, 1}, {0, 2}}}},
      {{"x", {2, 2}}, {"y", {3}}});
  const DigitMasks m = l.free_variable_masks();
  CHECK(m[0] == 0b010u);
  CHECK(m[1] == 0b10u);
  CHECK(kRegMinor.free_variable_masks() == DigitMasks{});
  // a zero image is always free
  CHECK((LL::identity1D(4, "in", "out") * LL::zeros1D(2, "in", "out")).free_variable_masks()[0] ==
        0b100u);
}

TEST_CASE("rank_per_prime") {
  // out [2,3,3,5] (strides 1,2,6,18): the radix-3 images 2 and 4 = 2·2 are dependent.
  const LL l = LL::from_images({{"r", {2, 3, 3, 5}, {{1}, {2}, {4}, {18}}}}, {{"o", {2, 3, 3, 5}}});
  CHECK(l.rank(2) == 1);
  CHECK(l.rank(3) == 1);
  CHECK(l.rank(5) == 1);
  CHECK(l.rank(7) == 0);
  CHECK(!l.is_surjective());
  CHECK(!l.is_injective());
  CHECK_THROWS_AS((void)l.rank(4), LayoutError);
}

TEST_CASE("pseudoinvert_picks_minimum_representative") {
  // two radix-3 digits, the second an alias (2·) of the first
  const LL l = LL::from_images({{"r", {3, 3}, {{1}, {2}}}}, {{"o", {3}}});
  const auto p = l.pseudoinvert();
  REQUIRE_MESSAGE(p.ok(), p.reason());
  for (int y = 0; y < 3; ++y) {
    const int x = p.value().apply({y})[0];
    CHECK(x == y);  // the minimum preimage uses digit 0 only
    CHECK(l.apply({x})[0] == y);
  }
  const auto bad = LL::zeros1D(4, "in", "out", 4).pseudoinvert();
  REQUIRE(!bad.ok());
  CHECK(contains(bad.reason(), "not surjective"));
  CHECK(contains(bad.reason(), "radix-2"));
  CHECK(!LL::zeros1D(4, "in", "out", 4).invert().ok());
}

TEST_CASE("invert_and_compose_minimum_offset") {
  // lane digit 1 duplicates digit 0: element 1 is held by lanes 1 and 2 (and 3 holds 0)
  const LL other = LL::from_images({{"lane", {2, 2}, {{1}, {1}}}}, {{"dim0", {2}}});
  const LL self = LL::identity1D(2, "t", "dim0");
  const auto c = self.invert_and_compose(other);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  CHECK(c.value().apply({0})[0] == 0);
  CHECK(c.value().apply({1})[0] == 1);  // lane 1, not lane 2
  // a broadcast radix-3 register digit resolves to register 0
  const LL bcast = LL::zeros1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0");
  const auto c2 = LL::identity1D(32, "lane", "dim0").invert_and_compose(bcast);
  REQUIRE(c2.ok());
  for (int ln = 0; ln < 32; ++ln) CHECK(c2.value().apply({ln}) == Image{0, ln, 0, 0});
  // kinds: a change of digit order vs an unreachable value
  CHECK(kRegMinor.invert_and_compose(kLanesMinor).needs_digit_reorder());
  const auto unreachable =
      LL::identity1D(4, "t", "dim0").invert_and_compose(LL::zeros1D(4, "lane", "dim0", 4));
  REQUIRE(!unreachable.ok());
  CHECK(unreachable.kind() == FailureKind::kUnsatisfied);
}

TEST_CASE("compose_digit_order_kind") {
  const auto c = kLanesMinor.compose(kRegMinor.invert().value());
  REQUIRE(!c.ok());
  CHECK(c.needs_digit_reorder());
  CHECK(contains(c.reason(), "different digit order"));
  CHECK(kRegMinor.is_invertible());
  CHECK(!LL::zeros1D(2, "in", "out").is_invertible());
}

TEST_CASE("product_factor_order_decides_digit_order") {
  // No re-ordering op exists: the factor order is how a digit order is chosen.
  CHECK(kRegMinor.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  CHECK(kLanesMinor.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(kRegMinor.apply({{"register", 1}})[0] == 1);
  CHECK(kLanesMinor.apply({{"register", 1}})[0] == 32);
}

// ---- the F_p primitive -----------------------------------------------------------------------

TEST_CASE("fp_matrix_row_reduce_lowest_first_pivots") {
  CHECK(inverse_mod(2, 3) == 2);
  CHECK(inverse_mod(3, 7) == 5);
  CHECK(inverse_mod(-1, 5) == 4);
  CHECK_THROWS_AS((void)inverse_mod(5, 5), LayoutError);
  // over F_3, columns c0 = (1,1), c1 = (2,2) = 2·c0, c2 = (0,1): pivots 0 and 2
  FpMatrix m(3, 2, 4);
  m.set(0, 0, 1);
  m.set(1, 0, 1);
  m.set(0, 1, 2);
  m.set(1, 1, -1);  // stored mod 3: 2
  m.set(1, 2, 1);
  m.set(0, 3, 2);  // right-hand side b = (2, 0)
  CHECK(m.at(1, 1) == 2);
  CHECK(m.rank_of_first(3) == 2);
  REQUIRE(m.row_reduce(3) == 2);
  CHECK(m.pivot_col(0) == 0);
  CHECK(m.pivot_col(1) == 2);
  // the solution with the free column 1 at 0: x0 = 2, x2 = -2 = 1 (2·c0 + c2 = (2, 0))
  CHECK(m.at(0, 3) == 2);
  CHECK(m.at(1, 3) == 1);
  CHECK(m.at(0, 1) == 2);  // the free column in terms of the pivots left of it
  CHECK_THROWS_AS((void)FpMatrix(4, 1, 1), LayoutError);
  CHECK_THROWS_AS((void)m.pivot_col(2), LayoutError);
}
