// One test per pitfall that Meta's NPOT fork of Triton's linear layouts hit
// (ANCHORS.md, "Layouts"). That fork keeps inputs as bit vectors and adds
// NPOT outputs modulo N; each test below shows our digit model avoids the
// trap, with a brute-force check where one is possible.
//
// This translation unit is compiled as a release build would be: NDEBUG is
// forced on before any header, so every check the layout code relies on
// must be a real check (a throw or a failed Result), never an assert.
#ifndef NDEBUG
#define NDEBUG 1
#endif

#include <doctest/doctest.h>

#include <cassert>
#include <set>
#include <string_view>
#include <vector>

#include "tilejit/layout/digits.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

/// All outputs of a one-in, one-out layout, by brute force over apply().
std::vector<int> outputs(const LL& l) {
  std::vector<int> v;
  for (int x = 0; x < l.in_size(0); ++x) v.push_back(l.apply({x})[0]);
  return v;
}
int distinct(const std::vector<int>& v) {
  return static_cast<int>(std::set<int>(v.begin(), v.end()).size());
}

}  // namespace

// Pitfall: "rank-based surjectivity checks are wrong under modular addition".
TEST_CASE("pitfall_surjectivity_is_rank_per_prime_not_bit_count") {
  // Two radix-3 digits with images 1 and 2 into [3,3]: as bit patterns 01 and
  // 10 they look independent (a GF(2) rank of 2 = "full"), but 2 = 2·1 over
  // F_3, so only 3 of 9 elements are reached.
  const LL dep = LL::from_images({{"r", {3, 3}, {{1}, {2}}}}, {{"o", {3, 3}}});
  CHECK(dep.rank(3) == 1);
  CHECK(!dep.is_surjective());
  CHECK(distinct(outputs(dep)) == 3);
  // One radix-3 digit with image 2 into [3]: "10" in bits, but 2 generates F_3.
  const LL two = LL::from_images({{"r", {3}, {{2}}}}, {{"o", {3}}});
  CHECK(two.is_surjective());
  CHECK(distinct(outputs(two)) == 3);
  // 16 inputs, 12 outputs: 4 bits ≥ log2(12), yet no radix-3 input digit, so
  // never surjective — sizes and bit counts decide nothing.
  const LL l16 = LL::from_images({{"r", {2, 2, 2, 2}, {{1}, {2}, {3}, {0}}}}, {{"o", {2, 2, 3}}});
  CHECK(!l16.is_surjective());
  CHECK(l16.rank(2) == 2);
  CHECK(distinct(outputs(l16)) == 4);
  // Modular addition of binary inputs into a size-3 output (the fork's
  // model) is not linear: 1 ⊕ 1 = 0 in the input but 1 + 1 = 2 mod 3. Here it
  // cannot even be written down: the validity rule rejects it.
  const auto mod = LL::try_from_images({{"r", {2, 2}, {{1}, {1}}}}, {{"o", {3}}});
  REQUIRE(!mod.ok());
  CHECK(contains(mod.reason(), "(radix 2) maps onto digit 0 of output dim \"o\" (radix 3)"));
}

// Pitfall: "the working modulus must be the LCM of sizes" — for us each
// digit has its own modulus, its radix, whatever the sizes of the dims are.
TEST_CASE("pitfall_each_digit_has_its_own_modulus") {
  // Outputs x [3], y [5], z [2,3] (sizes 3, 5, 6; LCM 30).
  // a (3) → (1,0,2), b (5) → (0,1,0), c (2) → (0,0,1), d (3) → (2,0,2).
  const LL l = LL::from_images({{"in", {3, 5, 2, 3}, {{1, 0, 2}, {0, 1, 0}, {0, 0, 1}, {2, 0, 2}}}},
                               {{"x", {3}}, {"y", {5}}, {"z", {2, 3}}});
  // z is added per digit: 3 ⊕ 3 = digits (1,1)+(1,1) = (0,2) = 4, not (3+3) mod 6 = 0
  CHECK(DigitSystem{2, 3}.add(3, 3) == 4);
  // a=2, c=1 → z = 2·2 ⊕ 1 = 4 ⊕ 1 = 5; a=1, c=1, d=1 → z = 2 ⊕ 1 ⊕ 2 = 4 ⊕ 1 = 5
  CHECK(l.apply({2 + 15 * 1})[2] == 5);
  CHECK(l.apply({1 + 15 * 1 + 30 * 1})[2] == 5);
  // The radix-3 block [[1,2],[1,1]] (rows x0, z1) is invertible over F_3;
  // the whole map is a bijection on 90 elements, solved per prime.
  REQUIRE(l.is_bijective());
  const LL inv = l.invert().value();
  std::set<Image> seen;
  for (int v = 0; v < 90; ++v) {
    const Image o = l.apply({v});
    CHECK(o[0] < 3);
    CHECK(o[1] < 5);
    CHECK(o[2] < 6);
    seen.insert(o);
    CHECK(inv.apply(o)[0] == v);
  }
  CHECK(seen.size() == 90u);
}

// Pitfall: "products of radix-3 and radix-9 dims need more digits than ceil(log2)".
TEST_CASE("pitfall_radix3_times_radix9_counts_ternary_digits") {
  const LL l = LL::identity1D(3, "in", "out") * LL::identity1D(9, "in", "out");
  CHECK(LL::identity1D(9, "in", "out").in_digits(0) == DigitSystem{3, 3});
  CHECK(l.in_digits(0) == DigitSystem{3, 3, 3});  // three ternary digits, size 27
  CHECK(l.in_size(0) == 27);
  CHECK(l.out_size(0) == 27);
  // every element exactly once and in range (a 2+4-bit encoding would make
  // 64 inputs, 37 of them invalid; ceil(log2 27) = 5 bits would not factor)
  std::vector<int> hit(27, 0);
  for (int x = 0; x < 27; ++x) {
    const int y = l.apply({x})[0];
    REQUIRE(y >= 0);
    REQUIRE(y < 27);
    ++hit[static_cast<std::size_t>(y)];
  }
  for (int h : hit) CHECK(h == 1);
  CHECK(l.invert().value().compose(l).value() == LL::identity1D(27, "out", "out"));
  // the same in two dims, then flattened: 3 x 9 = 27 still
  const LL two = LL::identity1D(9, "a", "x") * LL::identity1D(3, "b", "y");
  const LL flat = two.flatten_ins().flatten_outs();
  CHECK(flat.in_digits(0) == DigitSystem{3, 3, 3});
  CHECK(flat.is_bijective());
  CHECK(two.reshape_outs({{"x", 3}, {"y", 9}}).ok());  // runs of [3,3,3]
}

// Pitfall: "fast 'is identity' paths scrambled elements".
TEST_CASE("pitfall_identity_checks_are_exact_per_digit") {
  const DigitSystem systems[] = {
      {2, 2, 2, 2, 2, 3}, {3, 2, 2, 2, 2, 2}, {3, 3}, {2, 5, 2}, {7, 2}, {2, 3, 2}, {5}};
  for (const DigitSystem& ds : systems) {
    const LL id = LL::identity1D(ds, "x", "x");
    const LL inv = id.invert().value();
    const LL self = id.invert_and_compose(id).value();
    for (int i = 0; i < ds.size(); ++i) {
      CHECK(id.apply({i})[0] == i);
      CHECK(inv.apply({i})[0] == i);
      CHECK(self.apply({i})[0] == i);
    }
    CHECK(id.compose(id).value() == id);
    CHECK(id.num_consecutive_in_out() == ds.size());
    CHECK(id.quotient({"x"}).ok());
  }
  // Images 1, 2, 4 "look like" an identity; in [2,3] the image 4 is 2 in the
  // radix-3 digit (stride 2), so 3 = 1 ⊕ 2 maps to 1 ⊕ 4 = 5: not the identity.
  const LL near = LL::from_images({{"x", {2, 3}, {{1}, {4}}}}, {{"x", {2, 3}}});
  CHECK(near.apply({3})[0] == 5);
  CHECK(near.num_consecutive_in_out() == 2);
  CHECK(!near.quotient({"x"}).ok());
  // identities of the two 96-element digit systems are different maps of
  // different systems, never treated as one another
  const LL a = LL::identity1D(DigitSystem{2, 2, 2, 2, 2, 3}, "x", "x");
  const LL b = LL::identity1D(DigitSystem{3, 2, 2, 2, 2, 2}, "x", "x");
  CHECK(!(a == b));
  CHECK(a.compose(b).needs_digit_reorder());
  CHECK(a.invert_and_compose(b).needs_digit_reorder());
}

// Pitfall: "pseudo-inverses picked aliased representatives".
TEST_CASE("pitfall_pseudoinverse_picks_no_alias") {
  // register [3,3]: digit 1 aliases digit 0 (same image); lanes [2,2] identity.
  const LL l = LL::from_images({{"register", {3, 3}, {{1}, {1}}}, {"lane", {2, 2}, {{3}, {6}}}},
                               {{"dim0", {3, 2, 2}}});
  REQUIRE(l.is_surjective());
  REQUIRE(!l.is_injective());
  const LL p = l.pseudoinvert().value();
  for (int y = 0; y < 12; ++y) {
    const Image x = p.apply({y});
    CHECK(x[0] < 3);  // register digit 1 never used: no alias, no value ≥ 3
    CHECK(x[1] < 4);
    CHECK(l.apply(x)[0] == y);
    // and it is the minimum preimage (flattening order: register minor)
    int lowest = -1;
    for (int f = 0; f < 36 && lowest < 0; ++f) {
      if (l.apply({f % 9, f / 9})[0] == y) lowest = f;
    }
    CHECK(x[0] + 9 * x[1] == lowest);
  }
  CHECK(l.free_variable_masks()[0] == 0b10u);  // the alias is the free digit
}

// Pitfall: "slicing lost NPOT sizes".
TEST_CASE("pitfall_slicing_keeps_npot_sizes") {
  // 96 x 6 tile: dim0 = 3 registers x 32 lanes, dim1 = 6 warps-ish (2 x 3 registers)
  const LL l = LL::identity1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0") *
               LL::identity1D(2, "warp", "dim1") * LL::identity1D(3, "register", "dim1");
  REQUIRE(l.out_size(0) == 96);
  REQUIRE(l.out_size(1) == 6);
  // sublayout keeps the full NPOT sizes and digit systems, even where the
  // kept inputs reach only part of a dim
  const LL lanes = l.sublayout({"lane"}, {"dim0", "dim1"});
  CHECK(lanes.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  CHECK(lanes.out_digits(1) == DigitSystem{2, 3});
  // a slice (the reduced dim removed) keeps the other dim's size and digits
  const LL slice = l.remove_out_dim(1);
  CHECK(slice.out_size(0) == 96);
  CHECK(slice.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  CHECK(slice.in_digits(0) == DigitSystem{3, 3});  // registers of both dims stay inputs
  // flattening keeps the product 576 and its digits
  CHECK(l.flatten_outs().out_size(0) == 576);
  CHECK(l.flatten_outs().out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2, 2, 3});
  // division returns NPOT factors whole
  const auto c = divide_right(l, LL::identity1D(3, "register", "dim1"));
  REQUIRE_MESSAGE(c.ok(), c.reason());
  CHECK(c.value().out_size(0) == 96);
  CHECK(c.value().out_size(1) == 2);
}

// Pitfall: "asserts compiled out in release builds hid errors".
TEST_CASE("pitfall_checks_survive_ndebug") {
  bool asserted = false;
  assert((asserted = true));
  REQUIRE_MESSAGE(!asserted, "this file must be compiled with NDEBUG (asserts off)");
  // invalid layouts, out-of-range indices and misuse still throw ...
  CHECK_THROWS_AS((void)LL::from_images({{"r", {3}, {{1}}}}, {{"o", {2, 3}}}), LayoutError);
  CHECK_THROWS_AS((void)LL::identity1D(4, "in", "out").apply({4}), LayoutError);
  CHECK_THROWS_AS((void)LL::identity1D(4, "in", "out").transpose_ins({"nope"}), LayoutError);
  CHECK_THROWS_AS((void)LL::identity1D(4, "in", "out").sublayout({"nope"}, {}), LayoutError);
  CHECK_THROWS_AS((void)LL::identity1D(4, "in", "out").rank(9), LayoutError);
  CHECK_THROWS_AS((void)(DigitSystem{2, 4}), LayoutError);
  CHECK_THROWS_AS((void)DigitSystem::factor(22), LayoutError);
  CHECK_THROWS_AS(
      (void)LL::identity1D(96, "i", "o").flatten_ins().reshape_ins({{"a", 3}, {"b", 32}}).value(),
      LayoutError);
  // ... and fallible operations still say why
  const auto r = LL::identity1D(96, "i", "o").reshape_ins({{"a", 3}, {"b", 32}});
  CHECK(r.needs_digit_reorder());
  CHECK(!r.reason().empty());
  CHECK(!LL::zeros1D(2, "in", "out", 2).invert().ok());
  CHECK(!divide_left(LL::identity1D(4, "in", "out"), LL::identity1D(8, "in", "out")).ok());
  // and the same checks run at compile time
  static_assert(!LL::try_from_images({{"r", {3}, {{1}}}}, {{"o", {2, 3}}}).ok());
  static_assert(
      LL::identity1D(96, "i", "o").reshape_ins({{"a", 3}, {"b", 32}}).needs_digit_reorder());
}
