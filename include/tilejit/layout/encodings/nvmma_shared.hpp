// tilejit/layout/encodings/nvmma_shared.hpp — NVMMA-style shared-memory
// layouts (what TMA writes and wgmma reads) as linear layouts from the
// element offset in shared memory to the tile coordinate.
//
// Source: NVIDIA PTX ISA, wgmma "Shared Memory Matrix Layout" and the matrix
// descriptor's swizzling modes (§9.7.15.5.1.2, §9.7.16.4.1): a swizzled
// matrix is made of atoms of 8 rows of S bytes (S = 32, 64 or 128, the
// swizzle width); the pattern repeats every 8·S bytes (256/512/1024-byte
// boundaries), and within it the 16-byte chunk index (byte-address bits 4 and
// up) is XORed with byte-address bits 7 and up:
//
//     physical = logical ^ (((logical >> 7) & (S/16 - 1)) << 4)
//
// (CuTe's Swizzle<log2(S/16), 4, 3>). For S = 128 a row is 128 bytes and
// bits 7..9 are the row mod 8, so chunk c of row r lands in chunk c ^ (r%8);
// for S = 64 bits 7..8 are (r/2)%4, for S = 32 bit 7 is (r/4)%2. Triton's
// NVMMASharedEncodingAttr writes the same thing as (vec, perPhase, maxPhase)
// = (16 bytes, 128/S, S/16): row bit k adds vec·((2^k / perPhase) % maxPhase)
// to the column — a linear map over GF(2), so a swizzle is a layout like any
// other (getCoreMatrixLinearLayout in LinearLayoutConversions.cpp).
//
// Memory order. The contiguous dimension (contig_dim, default 1: rows of a
// K-major A or B) is cut into slabs of W = S / elem_bytes elements, the width
// of one swizzle row; a slab holds all rows, each W elements, and the slabs
// follow each other. So, before the swizzle,
//
//     offset = c + W·(row + rows·slab),   col = c + W·slab.
//
// Unswizzled (S = 0): plain row-major, offset = col + cols·row (one slab as
// wide as the tile; Triton's nvmma layout with swizzlingByteWidth 0).
//
// NPOT rows. The swizzle only involves the row mod 8, so rows = 8·q for any
// 7-smooth q is exact: the row dim gets digits [2,2,2 | factor(q)], e.g. 96
// rows → [2,2,2,2,2,3] and the radix-3 digit runs over groups of 32 rows,
// with the swizzle acting inside each power-of-two group of 8 rows. The
// offset dim is then NPOT too (its digits are those of W, the rows and the
// slabs); NPOT slab counts (192 f16 columns with S = 128: 3 slabs) work the
// same way.
//
// Worked example: nvmma_shared({8, 64}, 2, 128) — an 8×64 f16 atom, 128-byte
// swizzle. Offset digits: 6 column bits, then 3 row bits. Row bit k has image
// (row 2^k, col 8·2^k): row r's chunk c (elements 8c..8c+7) is stored in
// chunk c ^ r. Offset 8·64 - 1 = 511 (row 7, last element of stored chunk 7)
// holds element (7, 7): chunk 7 ^ 7 = 0, element 7 of it.
#pragma once

#include "tilejit/layout/encodings/common.hpp"

namespace tilejit::layout {

/// The shared-memory layout of a 2-D tile of `shape` = {size of dim0, size
/// of dim1}, elements of elem_bytes bytes, swizzle width swizzle_bytes ∈
/// {0 (none), 32, 64, 128}. contig_dim is the dimension contiguous in memory:
/// cols = shape[contig_dim], rows = shape[1 - contig_dim].
///
/// Shape contract: elem_bytes ∈ {1, 2, 4, 8}; contig_dim ∈ {0, 1}; with a
/// swizzle, cols a multiple of W = swizzle_bytes / elem_bytes and rows a
/// multiple of 8, both quotients 7-smooth; unswizzled, any 7-smooth sizes.
/// Result: input "offset" (element offset from the start of the tile, size
/// rows·cols); outputs dim0, dim1 with the sizes of shape; a bijection. The
/// element at offset o is the one whose swizzled byte address (formula in the
/// file comment) is o·elem_bytes.
[[nodiscard]] constexpr LinearLayout nvmma_shared(const DimValues& shape, int elem_bytes,
                                                  int swizzle_bytes, int contig_dim = 1) {
  constexpr const char* who = "nvmma_shared";
  if (shape.rank != 2) {
    detail::throw_layout_error(Reason("nvmma_shared: shape must have rank 2 (got ")
                               << shape.rank << ")");
  }
  detail::enc::require(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4 || elem_bytes == 8,
                       who, "elem_bytes must be 1, 2, 4 or 8", elem_bytes);
  detail::enc::require(
      swizzle_bytes == 0 || swizzle_bytes == 32 || swizzle_bytes == 64 || swizzle_bytes == 128, who,
      "swizzle_bytes must be 0, 32, 64 or 128", swizzle_bytes);
  detail::enc::require(contig_dim == 0 || contig_dim == 1, who, "contig_dim must be 0 or 1",
                       contig_dim);
  const int row_dim = 1 - contig_dim;
  const int rows = shape[row_dim];
  const int cols = shape[contig_dim];
  const char* row_name = detail::kStandardOutNames[row_dim];
  const char* col_name = detail::kStandardOutNames[contig_dim];
  using LL = LinearLayout;
  if (swizzle_bytes == 0) {
    detail::enc::require(detail::enc::is_smooth(rows) && detail::enc::is_smooth(cols), who,
                         "rows and cols must be products of 2, 3, 5, 7; rows·cols is", rows * cols);
    return detail::enc::outs(2) * LL::identity1D(cols, "offset", col_name) *
           LL::identity1D(rows, "offset", row_name);
  }
  const int w = swizzle_bytes / elem_bytes;  // elements per swizzle row
  const int vec = 16 / elem_bytes;           // elements per 16-byte chunk
  const int per_phase = 128 / swizzle_bytes;
  const int max_phase = swizzle_bytes / 16;
  const int slabs = detail::enc::reps(who, contig_dim, cols, w);
  const int groups = detail::enc::reps(who, row_dim, rows, 8);

  // One atom: W columns × 8 rows, the swizzle in the images of the row bits.
  LayoutBuilder b;
  b.add_out_dim("dim0", DigitSystem::factor(contig_dim == 0 ? w : 8));
  b.add_out_dim("dim1", DigitSystem::factor(contig_dim == 1 ? w : 8));
  DigitSystem offset = DigitSystem::factor(w);
  for (int k = 0; k < 3; ++k) offset.push_back(2);
  const int in = b.add_in_dim("offset", offset);
  int digit = 0;
  for (int c = 1; c < w; c *= 2) {
    Image img{};
    img[contig_dim] = c;
    b.set_image(in, digit++, img);
  }
  for (int r = 1; r < 8; r *= 2) {
    Image img{};
    img[row_dim] = r;
    img[contig_dim] = vec * ((r / per_phase) % max_phase);
    b.set_image(in, digit++, img);
  }
  // Then the other row groups (row % 8 is all the swizzle sees), then slabs.
  return b.build() * LL::identity1D(groups, "offset", row_name) *
         LL::identity1D(slabs, "offset", col_name);
}

}  // namespace tilejit::layout
