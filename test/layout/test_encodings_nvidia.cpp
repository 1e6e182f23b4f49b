// NVIDIA register encodings against the PTX ISA's fragment formulas, element by
// element: mma.sync.m16n8k16 C/D, A and B (§9.7.14.5.8) and wgmma.m64nNk16's
// f32 accumulator for every legal N (§9.7.15.5.1.1.1). Each expected
// coordinate below is written from the ISA's text (groupID = lane >> 2,
// threadID_in_group = lane % 4), not from the factories' products.
#include <doctest/doctest.h>

#include <array>

#include <string>
#include <vector>

#include "tilejit/layout/encodings/encodings.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

// ---- compile time: an NPOT wgmma accumulator built by the compiler ---------------
constexpr LL kW96 = wgmma_accumulator(96);
static_assert(kW96.out_size(0) == 64 && kW96.out_size(1) == 96);
static_assert(kW96.in_size(0) == 48 && kW96.in_size(1) == 32 && kW96.in_size(2) == 4);
static_assert(kW96.in_digits(0) == DigitSystem{2, 2, 2, 2, 3});
static_assert(kW96.out_digits(1) == DigitSystem{2, 2, 2, 2, 2, 3});
static_assert(kW96.apply({45, 6, 1}) == Image{17, 93, 0, 0});  // the header's example
static_assert(kW96.is_bijective());
static_assert(mma_sync_accumulator({16, 8}, {1, 1}).apply({3, 5, 0}) == Image{9, 3, 0, 0});
static_assert(!try_wgmma_accumulator({64, 88}, 88, {4, 1}).ok());
static_assert(wgmma_padded_n(88) == 96 && wgmma_padded_n(96) == 96);

struct Coord {
  int row = 0, col = 0;
};

/// Applies l to every (register, lane, warp) and compares with want(r, l, w);
/// counts how many inputs hold each element of the rows × cols tile. Every
/// element must be held exactly `copies` times (1: a bijection).
template <class Want>
void check_layout(const LL& l, int rows, int cols, int copies, Want want) {
  INFO(l.to_string());
  REQUIRE(l.num_in_dims() == 3);
  REQUIRE(l.in_name(0) == Name("register"));
  REQUIRE(l.in_name(1) == Name("lane"));
  REQUIRE(l.in_name(2) == Name("warp"));
  REQUIRE(l.num_out_dims() == 2);
  REQUIRE(l.out_name(0) == Name("dim0"));
  REQUIRE(l.out_name(1) == Name("dim1"));
  REQUIRE(l.out_size(0) == rows);
  REQUIRE(l.out_size(1) == cols);
  REQUIRE(l.total_in_size() == rows * cols * copies);
  std::vector<int> held(static_cast<std::size_t>(rows * cols), 0);
  int mismatches = 0;
  std::string first;
  for (int r = 0; r < l.in_size(0); ++r) {
    for (int ln = 0; ln < l.in_size(1); ++ln) {
      for (int w = 0; w < l.in_size(2); ++w) {
        const Coord c = want(r, ln, w);
        const Image got = l.apply({r, ln, w});
        if ((got[0] != c.row || got[1] != c.col) && mismatches++ == 0) {
          first = "register " + std::to_string(r) + " lane " + std::to_string(ln) + " warp " +
                  std::to_string(w) + ": got (" + std::to_string(got[0]) + "," +
                  std::to_string(got[1]) + ") want (" + std::to_string(c.row) + "," +
                  std::to_string(c.col) + ")";
        }
        if (c.row >= 0 && c.row < rows && c.col >= 0 && c.col < cols) {
          ++held[static_cast<std::size_t>(c.row * cols + c.col)];
        }
      }
    }
  }
  INFO("first mismatch: " << first);
  CHECK(mismatches == 0);
  int wrong_count = 0;
  for (int h : held) wrong_count += h != copies ? 1 : 0;
  CHECK(wrong_count == 0);
  CHECK(l.is_surjective());
  CHECK(l.is_injective() == (copies == 1));
}

// PTX formulas, one fragment of one instruction.
constexpr int group_id(int lane) { return lane >> 2; }
constexpr int thread_in_group(int lane) { return lane % 4; }

// mma.m16n8k16 f32 C/D: c0..c3.
Coord ptx_mma_c(int lane, int i) {
  return {group_id(lane) + (i < 2 ? 0 : 8), thread_in_group(lane) * 2 + (i & 1)};
}
// mma.m16n8k16 .f16/.bf16 A: a0..a7.
Coord ptx_mma_a(int lane, int i) {
  const bool low_row = i < 2 || (4 <= i && i < 6);
  return {group_id(lane) + (low_row ? 0 : 8),
          thread_in_group(lane) * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
// mma.m16n8k16 .f16/.bf16 B: b0..b3, (row, col) = (k, n).
Coord ptx_mma_b(int lane, int i) {
  return {thread_in_group(lane) * 2 + (i & 1) + (i >= 2 ? 8 : 0), group_id(lane)};
}
// wgmma.m64nNk16 f32 D: d0..d(N/2-1) of warp `warp` (0..3) of the warp group.
Coord ptx_wgmma_d(int warp, int lane, int i) {
  return {16 * warp + group_id(lane) + 8 * ((i % 4) / 2),
          thread_in_group(lane) * 2 + (i & 1) + 8 * (i / 4)};
}

void check_mma_c(int m, int n, int wm, int wn) {
  INFO("C " << m << "x" << n << " warps " << wm << "x" << wn);
  const int rep_n = n / (8 * wn);
  check_layout(mma_sync_accumulator({m, n}, {wm, wn}), m, n, 1, [&](int r, int lane, int w) {
    const Coord c = ptx_mma_c(lane, r % 4);
    const int rep = r / 4;
    return Coord{c.row + 16 * (w / wn) + 16 * wm * (rep / rep_n),
                 c.col + 8 * (w % wn) + 8 * wn * (rep % rep_n)};
  });
}

void check_mma_a(int m, int k, int wm, int wn) {
  INFO("A " << m << "x" << k << " warps " << wm << "x" << wn);
  const int rep_k = k / 16;
  check_layout(mma_sync_operand_a({m, k}, {wm, wn}), m, k, wn, [&](int r, int lane, int w) {
    const Coord c = ptx_mma_a(lane, r % 8);
    const int rep = r / 8;
    return Coord{c.row + 16 * (w / wn) + 16 * wm * (rep / rep_k), c.col + 16 * (rep % rep_k)};
  });
}

void check_mma_b(int k, int n, int wm, int wn) {
  INFO("B " << k << "x" << n << " warps " << wm << "x" << wn);
  const int rep_k = k / 16;
  check_layout(mma_sync_operand_b({k, n}, {wm, wn}), k, n, wm, [&](int r, int lane, int w) {
    const Coord c = ptx_mma_b(lane, r % 4);
    const int rep = r / 4;
    return Coord{c.row + 16 * (rep % rep_k), c.col + 8 * (w % wn) + 8 * wn * (rep / rep_k)};
  });
}

void check_wgmma(int m, int n_tile, int n, int wm, int wn) {
  INFO("wgmma " << m << "x" << n_tile << " N=" << n << " warps " << wm << "x" << wn);
  const int regs = n / 2;
  const int rep_n = n_tile / (n * wn);
  check_layout(wgmma_accumulator({m, n_tile}, n, {wm, wn}), m, n_tile, 1,
               [&](int r, int lane, int w) {
                 const int wm_idx = w % wm;  // warps stack along M first
                 const Coord c = ptx_wgmma_d(wm_idx % 4, lane, r % regs);
                 const int rep = r / regs;
                 return Coord{c.row + 64 * (wm_idx / 4) + 16 * wm * (rep / rep_n),
                              c.col + n * (w / wm) + n * wn * (rep % rep_n)};
               });
}

}  // namespace

TEST_CASE("encodings_mma_sync_accumulator_one_instruction") {
  check_mma_c(16, 8, 1, 1);
  const LL l = mma_sync_accumulator({16, 8}, {1, 1});
  CHECK(l.in_size(0) == 4);
  // The PTX figure: thread 0 holds (0,0) (0,1) (8,0) (8,1).
  CHECK(l.apply({0, 0, 0}) == Image{0, 0, 0, 0});
  CHECK(l.apply({1, 0, 0}) == Image{0, 1, 0, 0});
  CHECK(l.apply({2, 0, 0}) == Image{8, 0, 0, 0});
  CHECK(l.apply({3, 0, 0}) == Image{8, 1, 0, 0});
  CHECK(l.apply({0, 31, 0}) == Image{7, 6, 0, 0});
}

TEST_CASE("encodings_mma_sync_accumulator_tiles_and_warps") {
  check_mma_c(64, 64, 2, 2);
  check_mma_c(128, 128, 4, 2);
  check_mma_c(64, 32, 1, 4);
  check_mma_c(32, 96, 2, 1);  // 12 repetitions along N: register digits [2,2,2,2,3]
  check_mma_c(48, 24, 1, 1);  // 3 × 3 repetitions
  check_mma_c(80, 56, 1, 1);  // 5 and 7
  const LL l = mma_sync_accumulator({32, 96}, {2, 1});
  CHECK(l.in_digits(0) == DigitSystem{2, 2, 2, 2, 3});
  CHECK(l.out_digits(1) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(l.invert().ok());
}

TEST_CASE("encodings_mma_sync_operand_a") {
  check_mma_a(16, 16, 1, 1);
  check_mma_a(64, 32, 2, 2);  // warps along N broadcast: two holders per element
  check_mma_a(128, 64, 4, 1);
  check_mma_a(48, 48, 1, 2);  // NPOT M and K repetitions
  const LL l = mma_sync_operand_a({16, 16}, {1, 1});
  CHECK(l.apply({5, 6, 0}) == Image{1, 13, 0, 0});  // a5 of lane 6
  CHECK(l.in_size(0) == 8);
}

TEST_CASE("encodings_mma_sync_operand_b") {
  check_mma_b(16, 8, 1, 1);
  check_mma_b(32, 64, 2, 2);  // warps along M broadcast
  check_mma_b(64, 16, 4, 2);
  check_mma_b(48, 24, 1, 1);
  const LL l = mma_sync_operand_b({16, 8}, {1, 1});
  CHECK(l.apply({2, 9, 0}) == Image{10, 2, 0, 0});  // b2 of lane 9
  CHECK(l.in_size(0) == 4);
}

// PTX ISA's fragments of mma.m16n8k8 (.tf32: one element per register, kw = 1) and mma.m16n8k32 (8-bit: four per
// register, kw = 4), element i of the thread's A / B fragment, written from the ISA's tables.
static Coord ptx_mma_a_kw(int lane, int i, int kw) {
  if (kw == 1) return {group_id(lane) + 8 * (i % 2), thread_in_group(lane) + 4 * (i / 2)};
  return {group_id(lane) + 8 * ((i / 4) % 2), thread_in_group(lane) * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
static Coord ptx_mma_b_kw(int lane, int i, int kw) {
  if (kw == 1) return {thread_in_group(lane) + 4 * i, group_id(lane)};
  return {thread_in_group(lane) * 4 + (i & 3) + (i >= 4 ? 16 : 0), group_id(lane)};
}

TEST_CASE("encodings_mma_sync_operands_of_tf32_and_8_bit_types") {
  for (int kw : {1, 4}) {
    CAPTURE(kw);
    const int kstep = 8 * kw, na = 4 * kw, nb = 2 * kw;
    for (auto [m, k, wm, wn] : {std::array{16, kstep, 1, 1}, std::array{64, 2 * kstep, 2, 2}, std::array{48, 3 * kstep, 1, 2}}) {
      INFO("A " << m << "x" << k << " warps " << wm << "x" << wn);
      const int rep_k = k / kstep;
      check_layout(mma_sync_operand_a({m, k}, {wm, wn}, kw), m, k, wn, [&](int r, int lane, int w) {
        const Coord c = ptx_mma_a_kw(lane, r % na, kw);
        const int rep = r / na;
        return Coord{c.row + 16 * (w / wn) + 16 * wm * (rep / rep_k), c.col + kstep * (rep % rep_k)};
      });
    }
    for (auto [k, n, wm, wn] : {std::array{kstep, 8, 1, 1}, std::array{2 * kstep, 64, 2, 2}, std::array{3 * kstep, 24, 1, 1}}) {
      INFO("B " << k << "x" << n << " warps " << wm << "x" << wn);
      const int rep_k = k / kstep;
      check_layout(mma_sync_operand_b({k, n}, {wm, wn}, kw), k, n, wm, [&](int r, int lane, int w) {
        const Coord c = ptx_mma_b_kw(lane, r % nb, kw);
        const int rep = r / nb;
        return Coord{c.row + kstep * (rep % rep_k), c.col + 8 * (w % wn) + 8 * wn * (rep / rep_k)};
      });
    }
  }
  // The ISA's examples: tf32 a3 of lane 6 is (g + 8, t + 4) = (9, 6); s8 a13 of lane 6 is (g + 8, 4t + 1 + 16) = (9, 25);
  // s8 b5 of lane 9 is (4t + 1 + 16, g) = (21, 2).
  CHECK(mma_sync_operand_a({16, 8}, {1, 1}, 1).apply({3, 6, 0}) == Image{9, 6, 0, 0});
  CHECK(mma_sync_operand_a({16, 32}, {1, 1}, 4).apply({13, 6, 0}) == Image{9, 25, 0, 0});
  CHECK(mma_sync_operand_b({32, 8}, {1, 1}, 4).apply({5, 9, 0}) == Image{21, 2, 0, 0});
  CHECK(mma_sync_k_width(4) == 1);
  CHECK(mma_sync_k_width(2) == 2);
  CHECK(mma_sync_k_width(1) == 4);
  CHECK_THROWS_AS((void)mma_sync_k_width(8), LayoutError);
  CHECK_THROWS_AS((void)mma_sync_operand_a({16, 16}, {1, 1}, 4), LayoutError);  // K % 32
  CHECK_THROWS_AS((void)mma_sync_operand_b({16, 8}, {1, 1}, 3), LayoutError);   // k_width
}

TEST_CASE("encodings_mma_sync_rejects_what_does_not_fit") {
  CHECK_THROWS_AS((void)mma_sync_accumulator({24, 8}, {1, 1}), LayoutError);   // 24 % 16
  CHECK_THROWS_AS((void)mma_sync_accumulator({16, 8}, {2, 1}), LayoutError);   // 16 < 32
  CHECK_THROWS_AS((void)mma_sync_accumulator({16, 88}, {1, 1}), LayoutError);  // 11 reps
  CHECK_THROWS_WITH_AS((void)mma_sync_accumulator({16, 88}, {1, 11}), doctest::Contains("is not a product of 2, 3, 5 and 7"),
                       LayoutError);                                                // 11 warps
  // 3 warps along N: a radix-3 warp digit (codegen's num_warps = 12 uses the same), a bijection of 16 x 24.
  const auto three = mma_sync_accumulator({16, 24}, {1, 3});
  CHECK(three.in_size(three.in_dim_index(Name("warp"))) == 3);
  CHECK(three.is_bijective());
  CHECK_THROWS_AS((void)mma_sync_operand_a({16, 8}, {1, 1}), LayoutError);     // K % 16
  CHECK_THROWS_AS((void)mma_sync_operand_b({16, 12}, {1, 1}), LayoutError);    // N % 8
  CHECK_THROWS_WITH_AS((void)mma_sync_accumulator({16, 88}, {1, 1}),
                       doctest::Contains("prime factor 11"), LayoutError);
}

TEST_CASE("encodings_wgmma_every_legal_n") {
  int exact = 0, refused = 0;
  for (int n = 8; n <= 256; n += 8) {
    INFO("N = " << n);
    const auto r = try_wgmma_accumulator({64, n}, n, {4, 1});
    int q = n / 8;
    for (int p : {2, 3, 5, 7}) {
      while (q % p == 0) q /= p;
    }
    if (q != 1) {  // 88, 104, ...: a prime above 7 in N/8
      ++refused;
      CHECK_FALSE(r.ok());
      CHECK(std::string(r.reason()).find("prime factor " + std::to_string(q)) != std::string::npos);
      const int padded = wgmma_padded_n(n);
      CHECK(padded > n);
      CHECK(try_wgmma_accumulator({64, padded}, padded, {4, 1}).ok());
      continue;
    }
    ++exact;
    REQUIRE(r.ok());
    const LL& l = r.value();
    CHECK(l.out_size(1) == n);     // exact: no padding
    CHECK(l.in_size(0) == n / 2);  // N/2 registers per thread
    CHECK(l.in_digits(0).count(3) == DigitSystem::factor(n).count(3));
    CHECK(l.in_digits(0).count(5) == DigitSystem::factor(n).count(5));
    CHECK(l.in_digits(0).count(7) == DigitSystem::factor(n).count(7));
    check_wgmma(64, n, n, 4, 1);
  }
  CHECK(exact == 23);
  CHECK(refused == 9);  // 88 104 136 152 176 184 208 232 248
}

TEST_CASE("encodings_wgmma_npot_96_and_192") {
  for (int n : {96, 192}) {
    INFO("N = " << n);
    const LL l = wgmma_accumulator(n);
    CHECK(l.out_size(0) == 64);
    CHECK(l.out_size(1) == n);
    CHECK(l.in_digits(0).count(3) == 1);  // the radix-3 digit of N/8 = 12 or 24
    CHECK(l.out_digits(1).count(3) == 1);
    CHECK(l.total_in_size() == 64 * n);  // exact, nothing masked
    CHECK(l.is_bijective());
    check_wgmma(64, n, n, 4, 1);
  }
  // The radix-3 register digit sits at the top of the column chunk: register
  // 32 (chunk 8) holds column 64 of row g, register 47 the last column.
  const LL l = wgmma_accumulator(96);
  CHECK(l.apply({32, 0, 0}) == Image{0, 64, 0, 0});
  CHECK(l.apply({47, 3, 0}) == Image{8, 95, 0, 0});
}

TEST_CASE("encodings_wgmma_warp_groups_and_tiles") {
  check_wgmma(128, 96, 96, 8, 1);   // two warp groups along M
  check_wgmma(64, 192, 96, 4, 2);   // two warp groups along N
  check_wgmma(128, 256, 64, 4, 1);  // repetitions along M and N
  check_wgmma(192, 48, 24, 4, 1);   // 3 × 2 repetitions of an n24 instruction
  check_wgmma(64, 120, 40, 4, 1);   // N = 40: radix 5; 3 repetitions
  CHECK_THROWS_AS((void)wgmma_accumulator({64, 64}, 64, {2, 2}), LayoutError);  // wM % 4
  CHECK_THROWS_AS((void)wgmma_accumulator({64, 64}, 60, {4, 1}), LayoutError);  // N % 8
  CHECK_THROWS_AS((void)wgmma_accumulator({64, 264}, 264, {4, 1}), LayoutError);
  CHECK_THROWS_WITH_AS((void)wgmma_accumulator(88), doctest::Contains("pad N to 96"), LayoutError);
}
