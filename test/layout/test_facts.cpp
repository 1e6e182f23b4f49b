// The facts of /work/shared/cases/linear_layouts.md, one TEST_CASE each.
// Facts 1-9 are Triton's published behaviour (power of two); 10-14 are the
// mixed-radix ones derived from DESIGN.md §3. Fact 15's algebra half (the
// reshape that is not representable) is in test_algebra.cpp; the padding
// fallback itself lives elsewhere.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/digits.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// ---- compile-time checks: layouts are literal types ----------------------------

// 96 = 3 registers (minor) × 32 lanes, built and applied by the compiler.
constexpr LL k96 = LL::identity1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0");
static_assert(k96.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
static_assert(k96.apply({2, 5})[0] == 17);  // (register 2, lane 5) holds element 17
static_assert(k96.is_bijective());
static_assert(k96.invert().value().apply({95}) == Image{2, 31, 0, 0});
// Same names: identity1D(3) * identity1D(32) is one dimension of 96.
constexpr LL k96same = LL::identity1D(3, "in", "out") * LL::identity1D(32, "in", "out");
static_assert(k96same.in_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
static_assert(k96same.apply({17})[0] == 17);
// The validity rule is checked at compile time too.
static_assert(!LL::try_from_images({{"in", {3}, {{1}}}}, {{"out", {2, 3}}}).ok());
static_assert(LL::try_from_images({{"in", {3}, {{2}}}}, {{"out", {2, 3}}}).ok());
static_assert(DigitSystem::factor(96) == DigitSystem{2, 2, 2, 2, 2, 3});
static_assert(DigitSystem::factor(9) == DigitSystem{3, 3});

}  // namespace

// ---- digits --------------------------------------------------------------------------

TEST_CASE("factor_ascending_primes") {
  CHECK(DigitSystem::factor(96) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(DigitSystem::factor(9) == DigitSystem{3, 3});
  CHECK(DigitSystem::factor(1).num_digits() == 0);
  CHECK(DigitSystem::factor(1).size() == 1);
  CHECK(DigitSystem::factor(210) == DigitSystem{2, 3, 5, 7});
  CHECK_THROWS_AS((void)DigitSystem::factor(11), LayoutError);
  CHECK_THROWS_AS((void)DigitSystem::factor(0), LayoutError);
  CHECK_THROWS_AS((void)DigitSystem::factor(1 << 25), LayoutError);  // > kMaxDigits digits
  try {
    (void)DigitSystem::factor(2 * 11 * 13);
  } catch (const LayoutError& e) {
    CHECK(contains(e.what(), "286"));
    CHECK(contains(e.what(), "143"));
  }
}

TEST_CASE("digits_add_and_scale_without_carry") {
  const DigitSystem ds{2, 2, 2, 2, 2, 3};
  CHECK(ds.stride(5) == 32);
  CHECK(ds.stride(6) == 96);
  CHECK(ds.add(1, 1) == 0);      // radix 2: 1 + 1 = 0, no carry
  CHECK(ds.add(32, 32) == 64);   // radix 3: 1 + 1 = 2
  CHECK(ds.add(64, 32) == 0);    // radix 3: 2 + 1 = 0
  CHECK(ds.add(5, 3) == 6);      // 101 xor 011
  CHECK(ds.scale(33, 2) == 64);  // (1,...,1) · 2 = (0,...,2)
  CHECK(ds.scale(33, 3) == 1);
  CHECK(ds.scale(32, -1) == 64);  // the negation of digit 1 in radix 3 is 2
  for (int v = 0; v < 96; ++v) CHECK(ds.compose(ds.decompose(v)) == v);
}

// ---- facts 1-6: Triton parity ------------------------------------------------------------

TEST_CASE("identity1D_images") {  // fact 1
  const LL l = LL::identity1D(32, "in", "out");
  REQUIRE(l.in_digits(0).num_digits() == 5);
  for (int k = 0; k < 5; ++k) CHECK(l.image(0, k)[0] == (1 << k));
  CHECK(l.in_size(0) == 32);
  CHECK(l.out_size(0) == 32);
  const LL one = LL::identity1D(1, "in", "out");
  CHECK(one.num_in_dims() == 1);
  CHECK(one.in_digits(0).num_digits() == 0);
  CHECK(one.in_size(0) == 1);
  CHECK(one.out_size(0) == 1);
}

TEST_CASE("product_shared_dims") {  // fact 2
  const LL l = LL::identity1D(16, "in", "out") * LL::identity1D(32, "in", "out");
  REQUIRE(l.num_in_dims() == 1);
  REQUIRE(l.num_out_dims() == 1);
  REQUIRE(l.in_digits(0).num_digits() == 9);
  for (int k = 0; k < 9; ++k) CHECK(l.image(0, k)[0] == (1 << k));
  CHECK(l.in_size(0) == 512);
  CHECK(l.out_size(0) == 512);
}

TEST_CASE("product_identity_zeros") {  // fact 3
  const LL l = LL::identity1D(8, "in", "out") * LL::zeros1D(16, "in", "out");
  REQUIRE(l.in_digits(0).num_digits() == 7);
  const int expected[] = {1, 2, 4, 0, 0, 0, 0};
  for (int k = 0; k < 7; ++k) CHECK(l.image(0, k)[0] == expected[k]);
  CHECK(l.out_size(0) == 8);
  CHECK(!l.is_injective());
  CHECK(l.is_surjective());
}

TEST_CASE("product_different_out_dims") {  // fact 4
  const LL l = LL::identity1D(4, "in", "out1") * LL::identity1D(8, "in", "out2");
  REQUIRE(l.num_out_dims() == 2);
  CHECK(l.out_name(0) == Name("out1"));
  CHECK(l.out_name(1) == Name("out2"));
  REQUIRE(l.in_digits(0).num_digits() == 5);
  CHECK(l.image(0, 0) == Image{1, 0});
  CHECK(l.image(0, 1) == Image{2, 0});
  CHECK(l.image(0, 2) == Image{0, 1});
  CHECK(l.image(0, 3) == Image{0, 2});
  CHECK(l.image(0, 4) == Image{0, 4});
}

TEST_CASE("apply_two_in_dims") {  // fact 5
  const LL l = LL::from_images(
      {{"in1", {2, 2, 2}, {{4, 2}, {2, 1}, {1, 0}}}, {"in2", {2, 2}, {{1, 2}, {2, 1}}}},
      {{"out1", {2, 2, 2}}, {"out2", {2, 2}}});
  CHECK(l.apply({1, 0}) == Image{4, 2});
  CHECK(l.apply({0, 1}) == Image{1, 2});
  CHECK(l.apply({3, 0}) == Image{6, 3});
  // by names, in any order
  CHECK(l.apply({NamedIndex{"in2", 1}}) == Image{1, 2});
  CHECK(l.apply({{"in2", 0}, {"in1", 3}}) == Image{6, 3});
  CHECK_THROWS_AS((void)l.apply({8, 0}), LayoutError);
  CHECK_THROWS_AS((void)l.apply({{"nope", 1}}), LayoutError);
}

TEST_CASE("compose_two_dims") {  // fact 6
  const LL l1 =
      LL::from_images({{"in1", {2, 2}, {{1, 1}, {0, 1}}}, {"in2", {2, 2}, {{1, 0}, {1, 2}}}},
                      {{"out1", {2, 2}}, {"out2", {2, 2}}});
  const LL l2 =
      LL::from_images({{"out1", {2, 2}, {{2, 2}, {1, 0}}}, {"out2", {2, 2}, {{1, 1}, {2, 1}}}},
                      {{"out1", {2, 2}}, {"out2", {2, 2}}});
  const auto c = l1.compose(l2);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  const LL& l = c.value();
  CHECK(l.image(0, 0) == Image{3, 3});
  CHECK(l.image(0, 1) == Image{1, 1});
  CHECK(l.image(1, 0) == Image{2, 2});
  CHECK(l.image(1, 1) == Image{0, 3});
  CHECK(!l.is_surjective());
  // apply agrees with composing the applications
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) CHECK(l.apply({a, b}) == l2.apply(l1.apply({a, b})));
  }
}

TEST_CASE("reshape_ins_regroups_flattened_digits") {  // fact 7
  const LL l = LL::from_images({{"in1", {2, 2, 2}, {{1}, {4}, {8}}}, {"in2", {2}, {{2}}}},
                               {{"out", {2, 2, 2, 2}}});
  const auto r = l.reshape_ins({{"in3", 2}, {"in4", 8}});
  REQUIRE_MESSAGE(r.ok(), r.reason());
  const LL& m = r.value();
  REQUIRE(m.num_in_dims() == 2);
  CHECK(m.in_name(0) == Name("in3"));
  CHECK(m.in_name(1) == Name("in4"));
  REQUIRE(m.in_digits(0).num_digits() == 1);
  REQUIRE(m.in_digits(1).num_digits() == 3);
  CHECK(m.image(0, 0)[0] == 1);
  CHECK(m.image(1, 0)[0] == 4);
  CHECK(m.image(1, 1)[0] == 8);
  CHECK(m.image(1, 2)[0] == 2);
  CHECK(m.out_size(0) == 16);
}

TEST_CASE("flatten_outs_packs_outputs_first_dim_minor") {  // fact 8
  const LL l =
      LL::from_images({{"in1", {2, 2, 2}, {{1, 0}, {4, 1}, {8, 4}}}, {"in2", {2}, {{3, 2}}}},
                      {{"out1", {2, 2, 2, 2}}, {"out2", {2, 2, 2}}});
  const LL f = l.flatten_outs();
  REQUIRE(f.num_out_dims() == 1);
  CHECK(f.out_name(0) == Name("out1"));
  CHECK(f.out_size(0) == 128);
  CHECK(f.image(0, 0)[0] == 1);
  CHECK(f.image(0, 1)[0] == 20);
  CHECK(f.image(0, 2)[0] == 72);
  CHECK(f.image(1, 0)[0] == 35);
}

TEST_CASE("num_consecutive_in_out_examples") {  // fact 9
  auto one_dim = [](std::initializer_list<Image> images) {
    return LL::from_images({{"in", {2, 2, 2, 2}, images}}, {{"out", {2, 2, 2, 2}}});
  };
  CHECK(one_dim({{1}, {2}, {4}, {9}}).num_consecutive_in_out() == 1);
  CHECK(one_dim({{1}, {2}, {4}, {10}}).num_consecutive_in_out() == 2);
  CHECK(LL::from_images({{"in", {2, 2, 2}, {{1}, {4}, {2}}}}, {{"out", {2, 2, 2}}})
            .num_consecutive_in_out() == 2);
  CHECK((LL::identity1D(4, "in", "out1") * LL::identity1D(8, "in", "out2"))
            .num_consecutive_in_out() == 4);
}

// ---- facts 10-14: mixed radix ----------------------------------------------------------------

TEST_CASE("digit_systems_differ") {  // fact 10
  const DigitSystem lanes_minor{2, 2, 2, 2, 2, 3};
  const DigitSystem regs_minor{3, 2, 2, 2, 2, 2};
  CHECK(lanes_minor.size() == 96);
  CHECK(regs_minor.size() == 96);
  CHECK(!(lanes_minor == regs_minor));
  CHECK(lanes_minor.decompose(33) == DigitSystem::Digits{1, 0, 0, 0, 0, 1});
  CHECK(regs_minor.decompose(33) == DigitSystem::Digits{0, 1, 1, 0, 1, 0});
}

TEST_CASE("blocked96_registers_minor") {  // fact 11
  const LL l = blocked({96}, {3}, {32}, {1}, {0});
  CHECK(l.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  const int reg = l.in_dim_index("register"), lane = l.in_dim_index("lane");
  REQUIRE(l.in_digits(reg) == DigitSystem{3});
  CHECK(l.image(reg, 0)[0] == 1);
  const int lane_images[] = {3, 6, 12, 24, 48};
  for (int k = 0; k < 5; ++k) CHECK(l.image(lane, k)[0] == lane_images[k]);
  CHECK(l.apply({{"lane", 5}, {"register", 2}})[0] == 17);
  const auto inv = l.invert();
  REQUIRE_MESSAGE(inv.ok(), inv.reason());
  // inverse: dim0 -> (register, lane, warp)
  CHECK(inv.value().apply({95}) == Image{2, 31, 0, 0});
}

TEST_CASE("blocked96_lanes_minor_is_a_change_of_digit_order") {  // fact 12
  const LL l11 = blocked({96}, {3}, {32}, {1}, {0});
  const LL l12 = blocked({96}, {1}, {32}, {1}, {0});
  CHECK(l12.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  const int reg = l12.in_dim_index("register"), lane = l12.in_dim_index("lane");
  for (int k = 0; k < 5; ++k) CHECK(l12.image(lane, k)[0] == (1 << k));
  REQUIRE(l12.in_digits(reg) == DigitSystem{3});
  CHECK(l12.image(reg, 0)[0] == 32);
  CHECK(l12.is_bijective());

  // The conversion 11 -> 12 is not a digit-wise map: the algebra says why.
  const auto cvt = l11.invert_and_compose(l12);
  REQUIRE(!cvt.ok());
  CHECK(contains(cvt.reason(), "\"dim0\""));
  CHECK(contains(cvt.reason(), "[3,2,2,2,2,2]"));
  CHECK(contains(cvt.reason(), "[2,2,2,2,2,3]"));
  const auto comp = l12.compose(l11.invert().value());
  REQUIRE(!comp.ok());
  CHECK(contains(comp.reason(), "different digit order"));

  // ... and it really moves data between lanes: element e sits in lane e/3
  // in one layout and lane e%32 in the other.
  const LL inv11 = l11.invert().value(), inv12 = l12.invert().value();
  int moved = 0;
  for (int e = 0; e < 96; ++e) moved += inv11.apply({e})[lane] != inv12.apply({e})[lane] ? 1 : 0;
  CHECK(moved > 0);
}

TEST_CASE("invalid_radix_mapping") {  // fact 13
  // input digit of radix 3 mapped onto output digit 0 (radix 2) of [2,3]
  const auto bad = LL::try_from_images({{"register", {3}, {{1}}}}, {{"dim0", {2, 3}}});
  REQUIRE(!bad.ok());
  const std::string_view why = bad.reason();
  CHECK(contains(why, "digit 0 of input dim \"register\" (radix 3)"));
  CHECK(contains(why, "digit 0 of output dim \"dim0\" (radix 2)"));
  CHECK_THROWS_AS((void)LL::from_images({{"register", {3}, {{1}}}}, {{"dim0", {2, 3}}}),
                  LayoutError);
  CHECK_THROWS_WITH_AS((void)bad.value(), doctest::Contains("radix 3"), LayoutError);
  // image 2 is digit 1 of [2,3], which has radix 3: valid
  CHECK(LL::try_from_images({{"register", {3}, {{2}}}}, {{"dim0", {2, 3}}}).ok());
  // an image outside the output dim is reported too
  CHECK(!LL::try_from_images({{"register", {3}, {{6}}}}, {{"dim0", {2, 3}}}).ok());
  // the builder checks the same rule
  LayoutBuilder b;
  const int in = b.add_in_dim("in", {5});
  const int out = b.add_out_dim("out", {2, 5});
  b.set_image(in, 0, Image{1});
  CHECK(!b.try_build().ok());
  b.set_image(in, 0, Image{0}).set_image(in, 0, Image{}).set_image(in, 0, Image{2 * 3});
  CHECK(b.try_build().ok());
  (void)out;
}

TEST_CASE("product_digit_order_and_inverse") {  // fact 14
  const LL a = LL::identity1D(3, "in", "out") * LL::identity1D(32, "in", "out");
  const LL b = LL::identity1D(32, "in", "out") * LL::identity1D(3, "in", "out");
  CHECK(a.in_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  CHECK(a.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  CHECK(b.in_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(b.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(a.out_size(0) == 96);
  for (const LL* l : {&a, &b}) {
    CHECK(l->is_bijective());
    const LL inv = l->invert().value();
    CHECK(l->compose(inv).value() == LL::identity1D(l->in_digits(0), "in", "in"));
    CHECK(inv.compose(*l).value() == LL::identity1D(l->out_digits(0), "out", "out"));
  }
}

// ---- more algebra: inverses and solves beyond the facts -------------------------------------

TEST_CASE("invert_nontrivial_mixed") {
  // A non-identity bijection with digits of radix 2, 3 and 5 in two dims.
  // x = [2,5], y = [2,3,3]. r.0 (radix 3) → y.1·2 + y.2; r.1 → x.0 + y.0;
  // l.0 → y.0; l.1 (radix 5) → x.1; l.2 (radix 3) → y.2.
  const LL l = LL::from_images(
      {{"r", {3, 2}, {{0, 2 * 2 + 6}, {1, 1}}}, {"l", {2, 5, 3}, {{0, 1}, {2, 0}, {0, 6}}}},
      {{"x", {2, 5}}, {"y", {2, 3, 3}}});
  REQUIRE(l.is_bijective());
  const LL inv = l.invert().value();
  for (int r = 0; r < 6; ++r) {
    for (int ln = 0; ln < 30; ++ln) {
      const Image o = l.apply({r, ln});
      CHECK(inv.apply(o) == Image{r, ln});
    }
  }
  // not square / not full rank
  CHECK(!LL::zeros1D(4, "in", "out", 4).invert().ok());
  CHECK(!(LL::identity1D(4, "in", "out") * LL::zeros1D(2, "in", "out")).invert().ok());
}

TEST_CASE("invert_and_compose_picks_lowest_holder") {
  // other: 2 registers x 32 lanes over 32 elements; register digit broadcast.
  const LL other = LL::zeros1D(2, "register", "dim0") * LL::identity1D(32, "lane", "dim0");
  const LL self = LL::identity1D(32, "lane", "dim0");
  const auto c = self.invert_and_compose(other);
  REQUIRE_MESSAGE(c.ok(), c.reason());
  for (int ln = 0; ln < 32; ++ln) {
    const Image src = c.value().apply({ln});
    CHECK(src[0] == 0);  // register 0, never the broadcast copy
    CHECK(other.apply(src) == self.apply({ln}));
  }
  // other not surjective enough: fails with a reason
  const LL half = LL::identity1D(16, "lane", "dim0") * LL::zeros1D(2, "lane", "dim0", 2);
  const auto bad = self.invert_and_compose(half);
  CHECK(!bad.ok());
  CHECK(contains(bad.reason(), "not a value"));
}

TEST_CASE("remove_and_rename_dims") {
  const LL l = LL::identity1D(4, "in", "out1") * LL::identity1D(8, "in", "out2");
  const LL s = l.remove_out_dim(0);
  REQUIRE(s.num_out_dims() == 1);
  CHECK(s.out_name(0) == Name("out2"));
  CHECK(s.image(0, 0) == Image{0});
  CHECK(s.image(0, 2) == Image{1});
  const LL r = s.rename_out_dim(0, "dim0").rename_in_dim(0, "lane");
  CHECK(r.out_dim_index("dim0") == 0);
  CHECK(r.in_dim_index("lane") == 0);
  CHECK(r.in_dim_index("in") == -1);
  CHECK_THROWS_AS((void)l.rename_out_dim(0, "out2"), LayoutError);
  CHECK_THROWS_AS((void)Name("a_name_longer_than_15"), LayoutError);
}
