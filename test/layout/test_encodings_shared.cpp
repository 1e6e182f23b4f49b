// Shared-memory swizzles against the PTX swizzle formula, AMD MFMA accumulators
// against AMD's published lane/VGPR mapping, and slice layouts (reductions),
// element by element.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilejit/layout/encodings/encodings.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

// ---- compile time: a 128-byte swizzle over 96 rows ---------------------------------
constexpr LL kS96 = nvmma_shared({96, 64}, 2, 128);
static_assert(kS96.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
static_assert(kS96.apply({511}) == Image{7, 7, 0, 0});  // the header's example
static_assert(kS96.is_bijective());
static_assert(slice(kS96, 1).out_size(0) == 96);

// ---- shared memory ----------------------------------------------------------------

/// The PTX swizzle: 16-byte chunk bits (4 and up) XOR byte-address bits 7 and
/// up, as many bits as log2(swizzle_bytes / 16).
int ptx_swizzle(int byte_address, int swizzle_bytes) {
  if (swizzle_bytes == 0) return byte_address;
  const int mask = swizzle_bytes / 16 - 1;
  return byte_address ^ (((byte_address >> 7) & mask) << 4);
}

struct SharedCase {
  int rows, cols, elem_bytes, swizzle, contig_dim;
};

void check_shared(const SharedCase& s) {
  INFO("rows " << s.rows << " cols " << s.cols << " elem " << s.elem_bytes << "B swizzle "
               << s.swizzle << "B contig dim" << s.contig_dim);
  DimValues shape = s.contig_dim == 1 ? DimValues{s.rows, s.cols} : DimValues{s.cols, s.rows};
  const LL l = nvmma_shared(shape, s.elem_bytes, s.swizzle, s.contig_dim);
  INFO(l.to_string());
  REQUIRE(l.num_in_dims() == 1);
  REQUIRE(l.in_name(0) == Name("offset"));
  REQUIRE(l.in_size(0) == s.rows * s.cols);
  REQUIRE(l.out_size(0) == shape[0]);
  REQUIRE(l.out_size(1) == shape[1]);
  CHECK(l.is_bijective());

  // Element (row, col) → its unswizzled byte address (slab-major, see the
  // header) → the PTX swizzle → the element offset; the layout must map that
  // offset back to (row, col).
  const int w = s.swizzle == 0 ? s.cols : s.swizzle / s.elem_bytes;
  const int row_dim = 1 - s.contig_dim;
  std::vector<int> seen(static_cast<std::size_t>(s.rows * s.cols), 0);
  int mismatches = 0;
  std::string first;
  for (int row = 0; row < s.rows; ++row) {
    for (int col = 0; col < s.cols; ++col) {
      const int slab = col / w;
      const int logical = ((slab * s.rows + row) * w + col % w) * s.elem_bytes;
      const int offset = ptx_swizzle(logical, s.swizzle) / s.elem_bytes;
      REQUIRE(offset < s.rows * s.cols);
      ++seen[static_cast<std::size_t>(offset)];
      const Image got = l.apply({offset});
      if ((got[row_dim] != row || got[s.contig_dim] != col) && mismatches++ == 0) {
        first = "row " + std::to_string(row) + " col " + std::to_string(col) + " offset " +
                std::to_string(offset);
      }
    }
  }
  INFO("first mismatch: " << first);
  CHECK(mismatches == 0);
  CHECK(std::count(seen.begin(), seen.end(), 1) == s.rows * s.cols);

  // Each repeating block of 8 rows × swizzle bytes is a bijection onto one
  // 8-row × W-element atom of the tile.
  if (s.swizzle != 0) {
    const int atom = 8 * w;
    int bad_atoms = 0;
    for (int base = 0; base < s.rows * s.cols; base += atom) {
      std::set<std::pair<int, int>> cells;
      const Image first_cell = l.apply({base});
      const int row0 = first_cell[row_dim] / 8 * 8;
      const int col0 = first_cell[s.contig_dim] / w * w;
      for (int o = base; o < base + atom; ++o) {
        const Image got = l.apply({o});
        const int row = got[row_dim], col = got[s.contig_dim];
        if (row / 8 * 8 == row0 && col / w * w == col0) cells.insert({row, col});
      }
      bad_atoms += static_cast<int>(cells.size()) != atom ? 1 : 0;
    }
    CHECK(bad_atoms == 0);
  }
}

// ---- AMD MFMA ---------------------------------------------------------------------

struct Coord {
  int row = 0, col = 0;
};

/// AMD's mapping for the f32 result of v_mfma_f32_{32x32x8,16x16x16}{f16,bf16}
/// on wave64: lane l, accumulator VGPR v → (row i, column j).
Coord amd_mfma_d(int m_dim, int lane, int v) {
  if (m_dim == 32) return {8 * (v / 4) + 4 * (lane / 32) + v % 4, lane % 32};
  return {4 * (lane / 16) + v, lane % 16};
}

void check_mfma(int m, int n, int m_dim, int wm, int wn) {
  INFO("mfma " << m_dim << ": " << m << "x" << n << " warps " << wm << "x" << wn);
  const LL l = mfma_accumulator({m, n}, m_dim, {wm, wn});
  INFO(l.to_string());
  const int regs = m_dim * m_dim / 64;
  const int rep_n = n / (m_dim * wn);
  REQUIRE(l.in_size(0) == regs * (m / (m_dim * wm)) * rep_n);
  REQUIRE(l.in_size(1) == 64);
  REQUIRE(l.in_size(2) == wm * wn);
  REQUIRE(l.out_size(0) == m);
  REQUIRE(l.out_size(1) == n);
  std::vector<int> held(static_cast<std::size_t>(m * n), 0);
  int mismatches = 0;
  for (int r = 0; r < l.in_size(0); ++r) {
    for (int lane = 0; lane < 64; ++lane) {
      for (int w = 0; w < wm * wn; ++w) {
        const Coord c = amd_mfma_d(m_dim, lane, r % regs);
        const int rep = r / regs;
        const int row = c.row + m_dim * (w / wn) + m_dim * wm * (rep / rep_n);
        const int col = c.col + m_dim * (w % wn) + m_dim * wn * (rep % rep_n);
        const Image got = l.apply({r, lane, w});
        mismatches += got[0] != row || got[1] != col ? 1 : 0;
        ++held[static_cast<std::size_t>(row * n + col)];
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(std::count(held.begin(), held.end(), 1) == m * n);
  CHECK(l.is_bijective());
}

// ---- slice ------------------------------------------------------------------------

/// slice(l, dim) must agree with l on every input, minus output `dim`.
void check_slice_keep(const LL& l, int dim) {
  INFO("slice dim " << dim << " of " << l.to_string());
  const LL s = slice(l, dim);
  REQUIRE(s.num_out_dims() == l.num_out_dims() - 1);
  REQUIRE(s.num_in_dims() == l.num_in_dims());
  for (int j = 0, k = 0; j < l.num_out_dims(); ++j) {
    if (j == dim) continue;
    CHECK(s.out_digits(k) == l.out_digits(j));           // sizes, NPOT included, kept
    const std::string name = "dim" + std::to_string(k);  // renamed down past `dim`
    CHECK(s.out_name(k) == Name(std::string_view(name)));
    ++k;
  }
  int mismatches = 0;
  const int total = l.total_in_size();
  for (int flat = 0; flat < total; ++flat) {
    Image in{};
    for (int i = 0, rest = flat; i < l.num_in_dims(); ++i) {
      in[i] = rest % l.in_size(i);
      rest /= l.in_size(i);
    }
    const Image a = l.apply(in);
    const Image b = s.apply(in);
    for (int j = 0, k = 0; j < l.num_out_dims(); ++j) {
      if (j == dim) continue;
      mismatches += a[j] != b[k++] ? 1 : 0;
    }
  }
  CHECK(mismatches == 0);
}

/// With drop_copies: per (lane, warp), the same set of values as the kept
/// slice, one register per distinct value, no zero register image.
void check_slice_drop(const LL& l, int dim) {
  INFO("slice(drop) dim " << dim << " of " << l.to_string());
  const LL keep = slice(l, dim);
  const LL drop = slice(l, dim, SliceRegisters::drop_copies);
  REQUIRE(drop.in_name(0) == Name("register"));
  for (int k = 0; k < drop.in_digits(0).num_digits(); ++k) CHECK(drop.image(0, k) != Image{});
  for (int j = 0; j < keep.num_out_dims(); ++j) CHECK(drop.out_digits(j) == keep.out_digits(j));
  int bad = 0;
  for (int lane = 0; lane < l.in_size(1); ++lane) {
    for (int w = 0; w < l.in_size(2); ++w) {
      std::set<Image> a, b;
      for (int r = 0; r < keep.in_size(0); ++r) a.insert(keep.apply({r, lane, w}));
      for (int r = 0; r < drop.in_size(0); ++r) b.insert(drop.apply({r, lane, w}));
      bad += a != b || static_cast<int>(b.size()) != drop.in_size(0) ? 1 : 0;
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("encodings_shared_unswizzled") {
  check_shared({16, 64, 2, 0, 1});
  check_shared({96, 40, 4, 0, 1});
  check_shared({64, 24, 2, 0, 0});
  const LL l = nvmma_shared({4, 8}, 2, 0);
  CHECK(l.apply({13}) == Image{1, 5, 0, 0});  // row-major
}

TEST_CASE("encodings_shared_swizzle_modes_match_ptx") {
  for (int swz : {32, 64, 128}) {
    for (int eb : {1, 2, 4}) {
      check_shared({8, swz / eb, eb, swz, 1});       // one atom
      check_shared({64, 2 * swz / eb, eb, swz, 1});  // 8 row groups × 2 slabs
      check_shared({32, swz / eb, eb, swz, 0});      // contiguous along dim0
    }
  }
  check_shared({16, 16, 8, 128, 1});  // 8-byte elements
}

TEST_CASE("encodings_shared_swizzle_128B_xor_pattern") {
  // f16, one 8×64 atom: row r's chunk c (8 elements) is stored in chunk c ^ r.
  const LL l = nvmma_shared({8, 64}, 2, 128);
  int wrong = 0;
  for (int r = 0; r < 8; ++r) {
    for (int stored = 0; stored < 8; ++stored) {
      for (int e = 0; e < 8; ++e) {
        const Image got = l.apply({r * 64 + stored * 8 + e});
        wrong += got != Image{r, (stored ^ r) * 8 + e, 0, 0} ? 1 : 0;
      }
    }
  }
  CHECK(wrong == 0);
  // 64-byte swizzle, f16: rows pair up, phase (r/2) % 4.
  const LL l64 = nvmma_shared({8, 32}, 2, 64);
  CHECK(l64.apply({2 * 32 + 0}) == Image{2, 8, 0, 0});
  CHECK(l64.apply({7 * 32 + 3 * 8}) == Image{7, 0, 0, 0});
  // 32-byte swizzle, f16: phase (r/4) % 2.
  const LL l32 = nvmma_shared({8, 16}, 2, 32);
  CHECK(l32.apply({3 * 16}) == Image{3, 0, 0, 0});
  CHECK(l32.apply({4 * 16}) == Image{4, 8, 0, 0});
}

TEST_CASE("encodings_shared_npot_rows") {
  for (int rows : {24, 40, 96, 192, 72}) {
    check_shared({rows, 64, 2, 128, 1});
    check_shared({rows, 32, 2, 64, 1});
  }
  const LL l96 = nvmma_shared({96, 64}, 2, 128);
  CHECK(l96.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(l96.in_digits(0).count(3) == 1);
  const LL l192 = nvmma_shared({192, 128}, 2, 128);  // 192 rows, 2 slabs
  CHECK(l192.out_size(0) == 192);
  CHECK(l192.in_size(0) == 192 * 128);
  CHECK(l192.out_digits(0).count(3) == 1);
  check_shared({192, 128, 2, 128, 1});
  check_shared({64, 192, 2, 128, 1});  // 3 slabs of 64 columns
  check_shared({96, 96, 4, 128, 0});   // NPOT both ways, contiguous dim0
}

TEST_CASE("encodings_shared_rejects_what_does_not_fit") {
  CHECK_THROWS_AS((void)nvmma_shared({12, 64}, 2, 128), LayoutError);  // rows % 8
  CHECK_THROWS_AS((void)nvmma_shared({16, 48}, 2, 128), LayoutError);  // cols % 64
  CHECK_THROWS_AS((void)nvmma_shared({16, 64}, 3, 128), LayoutError);
  CHECK_THROWS_AS((void)nvmma_shared({16, 64}, 2, 96), LayoutError);
  CHECK_THROWS_AS((void)nvmma_shared({88, 64}, 2, 128), LayoutError);  // 11 row groups
  CHECK_THROWS_AS((void)nvmma_shared({16, 64}, 2, 128, 2), LayoutError);
}

TEST_CASE("encodings_mfma_32x32") {
  check_mfma(32, 32, 32, 1, 1);
  check_mfma(64, 64, 32, 2, 1);
  check_mfma(128, 128, 32, 2, 2);
  check_mfma(96, 64, 32, 1, 2);  // 3 repetitions along M
  const LL l = mfma_accumulator({32, 32}, 32, {1, 1});
  CHECK(l.in_size(0) == 16);
  CHECK(l.apply({6, 37, 0}) == Image{14, 5, 0, 0});
  // Lane 0 holds rows 0-3, 8-11, 16-19, 24-27 of column 0.
  CHECK(l.apply({4, 0, 0}) == Image{8, 0, 0, 0});
  CHECK(l.apply({15, 0, 0}) == Image{27, 0, 0, 0});
}

TEST_CASE("encodings_mfma_16x16") {
  check_mfma(16, 16, 16, 1, 1);
  check_mfma(64, 32, 16, 2, 2);
  check_mfma(48, 80, 16, 1, 1);  // 3 × 5 repetitions
  check_mfma(128, 64, 16, 4, 1);
  const LL l = mfma_accumulator({16, 16}, 16, {1, 1});
  CHECK(l.in_size(0) == 4);
  CHECK(l.apply({3, 63, 0}) == Image{15, 15, 0, 0});
  CHECK(l.apply({1, 17, 0}) == Image{5, 1, 0, 0});
  CHECK_THROWS_AS((void)mfma_accumulator({16, 16}, 8, {1, 1}), LayoutError);
  CHECK_THROWS_AS((void)mfma_accumulator({16, 24}, 16, {1, 1}), LayoutError);
}

TEST_CASE("encodings_slice_keeps_npot_sizes") {
  const LL b = blocked({96, 48}, {3, 1}, {4, 8}, {2, 2}, {1, 0});
  check_slice_keep(b, 0);
  check_slice_keep(b, 1);
  CHECK(slice(b, 1).out_size(0) == 96);  // not 128, not 64
  CHECK(slice(b, 0).out_size(0) == 48);
  CHECK(slice(b, 0).out_name(0) == Name("dim0"));
  check_slice_drop(b, 0);
  check_slice_drop(b, 1);

  const LL w = wgmma_accumulator(96);
  check_slice_keep(w, 0);
  check_slice_keep(w, 1);
  // Column sums (reduce dim0): 96 columns, the radix-3 register digit stays;
  // the register digit for row + 8 becomes a copy and is dropped.
  const LL cols = slice(w, 0, SliceRegisters::drop_copies);
  CHECK(cols.out_size(0) == 96);
  CHECK(cols.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(cols.in_digits(0) == DigitSystem{2, 2, 2, 3});
  check_slice_drop(w, 0);
  // Row sums (reduce dim1): 64 rows; only the row + 8 register digit remains.
  const LL rows = slice(w, 1, SliceRegisters::drop_copies);
  CHECK(rows.out_size(0) == 64);
  CHECK(rows.in_digits(0) == DigitSystem{2});
  check_slice_drop(w, 1);

  // Rank 3: the dims after the removed one are renamed down.
  const LL b3 = blocked({2, 96, 4}, {1, 3, 1}, {2, 8, 2}, {1, 2, 2}, {2, 1, 0});
  const LL s3 = slice(b3, 0);
  CHECK(s3.out_name(0) == Name("dim0"));
  CHECK(s3.out_name(1) == Name("dim1"));
  CHECK(s3.out_size(0) == 96);
  CHECK(s3.out_size(1) == 4);
  check_slice_keep(b3, 0);
  check_slice_keep(b3, 1);
  check_slice_keep(b3, 2);
  CHECK_THROWS_AS((void)slice(b, 2), LayoutError);
}

TEST_CASE("encodings_slice_mma_row_sums") {
  // The header's example: row sums of a 16×8 mma.sync accumulator.
  const LL c = mma_sync_accumulator({16, 8}, {1, 1});
  const LL s = slice(c, 1);
  CHECK(s.image(0, 0) == Image{0, 0, 0, 0});
  CHECK(s.image(0, 1) == Image{8, 0, 0, 0});
  CHECK(s.image(1, 0) == Image{0, 0, 0, 0});
  CHECK(s.image(1, 1) == Image{0, 0, 0, 0});
  CHECK(s.image(1, 2) == Image{1, 0, 0, 0});
  CHECK(s.apply({0, 4, 0}) == s.apply({0, 7, 0}));  // a quad shares its row
  const LL d = slice(c, 1, SliceRegisters::drop_copies);
  CHECK(d.in_size(0) == 2);
  CHECK(d.apply({1, 4, 0}) == Image{9, 0, 0, 0});
  CHECK(d.is_surjective());
  check_slice_keep(mma_sync_accumulator({32, 96}, {2, 1}), 1);
  check_slice_drop(mma_sync_accumulator({32, 96}, {2, 1}), 1);
  check_slice_drop(mma_sync_accumulator({32, 96}, {2, 1}), 0);
}
