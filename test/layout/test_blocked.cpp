// Blocked layouts against brute force: for every (register, lane, warp) the
// layout must give the coordinate of the textbook formula
//
//   x_d = r_d + spt_d · (l_d + tpw_d · (w_d + wpc_d · rep_d))   (mod shape_d)
//
// where the flat register/lane/warp numbers are split over the dims minor
// first (`order`), registers as [size_per_thread part | repetition part].
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tilejit/layout/blocked.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

// Compile time: 96 floats, 3 contiguous per lane (fact 11), and its inverse.
constexpr LL kB96 = blocked_1d(96, 1, 32, 3);
static_assert(kB96.apply({2, 5, 0})[0] == 17);
static_assert(kB96.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
static_assert(kB96.invert().value().apply({95}) == Image{2, 31, 0, 0});
constexpr LL kB2d = blocked({16, 96}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
static_assert(kB2d.out_size(0) == 16 && kB2d.out_size(1) == 96);
static_assert(kB2d.in_size(0) == 12 && kB2d.in_size(1) == 32 && kB2d.in_size(2) == 4);

struct Config {
  DimValues shape, spt, tpw, wpc, order;
};

std::string describe(const Config& c) {
  auto list = [](const DimValues& v) {
    std::string s = "[";
    for (int d = 0; d < v.rank; ++d) {
      if (d != 0) s += ',';
      s += std::to_string(v[d]);
    }
    return s += ']';
  };
  return "shape " + list(c.shape) + " spt " + list(c.spt) + " tpw " + list(c.tpw) + " wpc " +
         list(c.wpc) + " order " + list(c.order);
}

/// Splits a flat number over the dims, minor dim of `order` first.
Image split(int flat, const DimValues& per_dim, const DimValues& order) {
  Image parts{};
  for (int i = 0; i < order.rank; ++i) {
    parts[order[i]] = flat % per_dim[order[i]];
    flat /= per_dim[order[i]];
  }
  return parts;
}

/// Checks blocked(c) against the formula for every input; checks that every
/// element has a holder; when the shape covers the pattern, checks that the
/// layout is a bijection and that its inverse finds each element's holder.
void check_blocked(const Config& c) {
  INFO(describe(c));
  const int rank = c.shape.rank;
  const LL l = blocked(c.shape, c.spt, c.tpw, c.wpc, c.order);
  INFO(l.to_string());
  REQUIRE(l.num_in_dims() == 3);
  REQUIRE(l.num_out_dims() == rank);
  CHECK(l.in_name(0) == Name("register"));
  CHECK(l.in_name(1) == Name("lane"));
  CHECK(l.in_name(2) == Name("warp"));

  DimValues rep = c.shape;
  bool covers = true;
  for (int d = 0; d < rank; ++d) {
    const int cover = c.spt[d] * c.tpw[d] * c.wpc[d];
    rep.v[d] = std::max(1, c.shape[d] / cover);
    covers = covers && c.shape[d] >= cover;
    CHECK(l.out_size(d) == c.shape[d]);
  }
  const int regs = c.spt.product() * rep.product();
  REQUIRE(l.in_size(0) == regs);
  REQUIRE(l.in_size(1) == c.tpw.product());
  REQUIRE(l.in_size(2) == c.wpc.product());

  int total = 1;
  for (int d = 0; d < rank; ++d) total *= c.shape[d];
  std::vector<int> holders(static_cast<std::size_t>(total), 0);
  int mismatches = 0;
  std::string first;
  for (int r = 0; r < regs; ++r) {
    const Image rs = split(r % c.spt.product(), c.spt, c.order);
    const Image rr = split(r / c.spt.product(), rep, c.order);
    for (int ln = 0; ln < c.tpw.product(); ++ln) {
      const Image ls = split(ln, c.tpw, c.order);
      for (int w = 0; w < c.wpc.product(); ++w) {
        const Image ws = split(w, c.wpc, c.order);
        Image want{};
        int flat = 0;
        for (int d = rank - 1; d >= 0; --d) {
          want[d] =
              (rs[d] + c.spt[d] * (ls[d] + c.tpw[d] * (ws[d] + c.wpc[d] * rr[d]))) % c.shape[d];
          flat = flat * c.shape[d] + want[d];
        }
        const Image got = l.apply({r, ln, w});
        if (got != want && mismatches++ == 0) {
          first = "register " + std::to_string(r) + " lane " + std::to_string(ln) + " warp " +
                  std::to_string(w);
        }
        ++holders[static_cast<std::size_t>(flat)];
      }
    }
  }
  INFO("first mismatch: " << first);
  CHECK(mismatches == 0);
  CHECK(std::count(holders.begin(), holders.end(), 0) == 0);
  CHECK(l.is_surjective());
  CHECK(l.is_injective() == covers);

  const auto inv = l.invert();
  CHECK(inv.ok() == covers);
  if (covers && inv.ok()) {
    int wrong = 0;
    for (int e = 0; e < total; ++e) {
      Image coord{};
      for (int d = rank - 1, rest = e; d >= 0; --d) {
        coord[d] = rest % c.shape[d];
        rest /= c.shape[d];
      }
      const Image holder = inv.value().apply(coord);
      wrong += l.apply(holder) != coord ? 1 : 0;
    }
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("blocked_1d_96_registers_minor") { check_blocked({{96}, {3}, {32}, {1}, {0}}); }

TEST_CASE("blocked_1d_96_lanes_minor") {
  check_blocked({{96}, {1}, {32}, {1}, {0}});
  const LL l = blocked_1d(96, 1);
  CHECK(l.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(l.image(0, 0)[0] == 32);
}

TEST_CASE("blocked_2d_16x96") { check_blocked({{16, 96}, {1, 4}, {4, 8}, {4, 1}, {1, 0}}); }

TEST_CASE("blocked_2d_4x768") { check_blocked({{4, 768}, {1, 3}, {2, 16}, {2, 2}, {1, 0}}); }

TEST_CASE("blocked_2d_1x12288_8_warps") {
  check_blocked({{1, 12288}, {1, 3}, {1, 32}, {1, 8}, {1, 0}});
  check_blocked({{1, 12288}, {1, 1}, {1, 32}, {1, 8}, {1, 0}});
}

TEST_CASE("blocked_2d_column_major") { check_blocked({{96, 64}, {3, 2}, {8, 4}, {2, 2}, {0, 1}}); }

TEST_CASE("blocked_wave64") {
  check_blocked({{192}, {3}, {64}, {1}, {0}});
  check_blocked({{48, 40}, {3, 5}, {8, 8}, {2, 1}, {1, 0}});
}

TEST_CASE("blocked_replication_smaller_than_coverage") {
  check_blocked({{8}, {1}, {32}, {1}, {0}});                 // lanes 8..31 replicate
  check_blocked({{48}, {3}, {32}, {4}, {0}});                // lanes 16..31 and warps 1..3
  check_blocked({{2}, {4}, {32}, {1}, {0}});                 // registers 2,3 repeat 0,1
  check_blocked({{2, 6}, {1, 3}, {2, 16}, {2, 2}, {1, 0}});  // cut along both dims
  check_blocked({{16, 16}, {1, 1}, {4, 8}, {4, 1}, {1, 0}});
  const LL l = blocked({8}, {1}, {32}, {1}, {0});
  CHECK(l.apply({0, 8, 0})[0] == 0);
  CHECK(l.apply({0, 13, 0})[0] == 5);
}

TEST_CASE("blocked_rejects_what_does_not_fit") {
  // 32 is not a prefix of the coverage digits [3,2,2,2,2,2]
  CHECK_THROWS_WITH_AS((void)blocked({32}, {3}, {32}, {1}, {0}), doctest::Contains("[3,2,2,2,2,2]"),
                       LayoutError);
  // 100 is not a multiple of the coverage 32
  CHECK_THROWS_AS((void)blocked({100}, {1}, {32}, {1}, {0}), LayoutError);
  CHECK_THROWS_AS((void)blocked({96}, {1}, {16}, {1}, {0}), LayoutError);  // warp of 16
  CHECK_THROWS_AS((void)blocked({96}, {1}, {32}, {3}, {0}), LayoutError);  // 3 warps
  CHECK_THROWS_AS((void)blocked({4, 96}, {1, 1}, {1, 32}, {1, 1}, {0, 0}), LayoutError);
  CHECK_THROWS_AS((void)blocked({4, 96}, {1, 1}, {1, 32}, {1, 1}, {0}), LayoutError);
  CHECK_THROWS_AS((void)blocked({88}, {11}, {32}, {1}, {0}), LayoutError);  // prime 11
}
