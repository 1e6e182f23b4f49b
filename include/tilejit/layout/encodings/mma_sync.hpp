// tilejit/layout/encodings/mma_sync.hpp — mma.sync fragments (sm_80+) as
// linear layouts: the 32-bit accumulator C/D and the operands A and B of
// m16n8k8 (.tf32), m16n8k16 (.f16/.bf16) and m16n8k32 (.s8, and .e4m3/.e5m2
// from sm_89).
//
// Source: NVIDIA PTX ISA, "Matrix Fragments for mma.m16n8k8 / m16n8k16 /
// m16n8k32" (§9.7.14.5.7-9). With g = lane / 4 ("groupID"), t = lane % 4
// ("threadID_in_group") and w = k_width, the elements one 32-bit register
// holds along K (1 for tf32, 2 for 16-bit, 4 for 8-bit types), a warp holds
//
//   C/D (16×8, 32-bit, c0..c3):  row = g + 8·(i/2)                 col = 2t + i%2
//   A  (16×8w, a0..a(4w-1)):     row = g + 8·((i/w)%2)             col = w·t + i%w + 4w·(i/2w)
//   B  (8w×8,  b0..b(2w-1)):     row = w·t + i%w + 4w·(i/w)        col = g
//
// (B's row is K, its column N.) For w = 2 these are m16n8k16's a0..a7 (col =
// 2t + i%2 + 8·(i/4)) and b0..b3; for w = 1 m16n8k8's tf32 a0..a3 (col = t +
// 4·(i/2)) and b0, b1; for w = 4 m16n8k32's 8-bit a0..a15 (col = 4t + i%4 +
// 16·(i/8)) and b0..b7. Each formula is linear in the bits of i and lane, so
// each is a product of identities — the same factorisation as Triton's
// nvidiaMmaTile (kWidth = w registers along the contiguous dim, 4 lanes along
// it, 8 lanes across, then registers for the rest).
//
// Tiles and warps. warps_per_cta = {wM, wN} are the accumulator's warps; warp
// w sits at (w / wN, w % wN) — dim1 minor, Triton's Ampere warp order {1, 0}.
// A warp's footprint repeats over the tile through register digits above the
// instruction's, columns first (see common.hpp). The operands follow the
// accumulator: A's warps along N, and B's along M, hold the same data
// (broadcast, image 0), since every warp of a row of C needs the same A rows.
// So C is a bijection; A is injective only when wN = 1, B only when wM = 1.
#pragma once

#include "tilejit/layout/encodings/common.hpp"

namespace tilejit::layout {

/// Accumulator C/D of mma.sync.m16n8k16 with f32 accumulators, for a tile of
/// shape {M, N} over warps_per_cta = {wM, wN} warps.
///
/// Shape contract: M a multiple of 16·wM, N a multiple of 8·wN, the
/// quotients 7-smooth (NPOT allowed: N = 96 gives 12 repetitions, digits
/// [2,2,3]); wM, wN powers of two.
/// Result: inputs register (4·(M/16wM)·(N/8wN)), lane (32), warp (wM·wN);
/// outputs dim0 = M, dim1 = N; a bijection. Register r, lane l, warp w hold
///
///   row = l/4 + 8·((r%4)/2) + 16·(w / wN) + 16·wM·repM
///   col = 2·(l%4) + r%2     + 8·(w % wN)  + 8·wN·repN,   r/4 = repN + (N/8wN)·repM.
///
/// Example: mma_sync_accumulator({16, 8}, {1, 1}); lane 5, register 3 →
/// (row 9, col 3): g = 1, t = 1; c3 is (g + 8, 2t + 1).
[[nodiscard]] constexpr LinearLayout mma_sync_accumulator(const DimValues& shape,
                                                          const DimValues& warps_per_cta) {
  constexpr const char* who = "mma_sync_accumulator";
  detail::enc::require_2d(who, shape, warps_per_cta);
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  const int rep_m = detail::enc::reps(who, 0, shape[0], 16 * wm);
  const int rep_n = detail::enc::reps(who, 1, shape[1], 8 * wn);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(2, "register", "dim1") *
         LL::identity1D(4, "lane", "dim1") * LL::identity1D(8, "lane", "dim0") *
         LL::identity1D(2, "register", "dim0") * LL::identity1D(wn, "warp", "dim1") *
         LL::identity1D(wm, "warp", "dim0") * LL::identity1D(rep_n, "register", "dim1") *
         LL::identity1D(rep_m, "register", "dim0");
}

/// Elements of one 32-bit mma.sync operand register along K for an element of `bytes` bytes: 1 (tf32), 2 (f16,
/// bf16) or 4 (i8, e4m3, e5m2). Throws LayoutError for other sizes.
[[nodiscard]] constexpr int mma_sync_k_width(int bytes) {
  if (bytes == 4) return 1;
  if (bytes == 2) return 2;
  if (bytes == 1) return 4;
  throw LayoutError("mma_sync_k_width: an mma.sync operand element is 1, 2 or 4 bytes");
}

/// Operand A (M×K) of mma.sync for a tile of shape {M, K}, for the accumulator
/// layout with warps_per_cta = {wM, wN}; k_width w = elements per 32-bit
/// register (mma_sync_k_width): one instruction covers K = 8w (m16n8k8 tf32,
/// m16n8k16 16-bit, m16n8k32 8-bit).
///
/// Shape contract: M a multiple of 16·wM, K a multiple of 8w, quotients
/// 7-smooth. Result: inputs register (4w·(K/8w)·(M/16wM)), lane, warp
/// (wM·wN, the same warps as the accumulator); outputs dim0 = M, dim1 = K.
/// Register r, lane l, warp w' hold (i = r % 4w)
///
///   row = l/4 + 8·((i/w)%2) + 16·(w' / wN) + 16·wM·repM
///   col = w·(l%4) + i%w + 4w·(i/2w) + 8w·repK,          r/4w = repK + (K/8w)·repM
///
/// and warps differing only in w' % wN hold the same elements (broadcast).
/// Example: mma_sync_operand_a({16, 16}, {1, 1}); lane 6, register 5
/// (a5) → (row 1, col 13): g = 1, t = 2, a5 = (g, 2t + 1 + 8).
[[nodiscard]] constexpr LinearLayout mma_sync_operand_a(const DimValues& shape,
                                                        const DimValues& warps_per_cta, int k_width = 2) {
  constexpr const char* who = "mma_sync_operand_a";
  detail::enc::require_2d(who, shape, warps_per_cta);
  if (k_width != 1 && k_width != 2 && k_width != 4) throw LayoutError("mma_sync_operand_a: k_width must be 1, 2 or 4");
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  const int rep_m = detail::enc::reps(who, 0, shape[0], 16 * wm);
  const int rep_k = detail::enc::reps(who, 1, shape[1], 8 * k_width);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(k_width, "register", "dim1") *
         LL::identity1D(4, "lane", "dim1") * LL::identity1D(8, "lane", "dim0") *
         LL::identity1D(2, "register", "dim0") * LL::identity1D(2, "register", "dim1") *
         LL::zeros1D(wn, "warp", "dim1") * LL::identity1D(wm, "warp", "dim0") *
         LL::identity1D(rep_k, "register", "dim1") * LL::identity1D(rep_m, "register", "dim0");
}

/// Operand B (K×N) of mma.sync for a tile of shape {K, N}, for the
/// accumulator layout with warps_per_cta = {wM, wN}; k_width w as for A.
///
/// Shape contract: K a multiple of 8w, N a multiple of 8·wN, quotients
/// 7-smooth. Result: inputs register (2w·(K/8w)·(N/8wN)), lane, warp (wM·wN);
/// outputs dim0 = K, dim1 = N. Register r, lane l, warp w' hold (i = r % 2w)
///
///   row (k) = w·(l%4) + i%w + 4w·(i/w) + 8w·repK
///   col (n) = l/4 + 8·(w' % wN) + 8·wN·repN,             r/2w = repK + (K/8w)·repN
///
/// and warps differing only in w' / wN hold the same elements (broadcast).
/// Example: mma_sync_operand_b({16, 8}, {1, 1}); lane 9, register 2 (b2) →
/// (k 10, n 2): g = 2, t = 1, b2 = (2t + 8, g).
[[nodiscard]] constexpr LinearLayout mma_sync_operand_b(const DimValues& shape,
                                                        const DimValues& warps_per_cta, int k_width = 2) {
  constexpr const char* who = "mma_sync_operand_b";
  detail::enc::require_2d(who, shape, warps_per_cta);
  if (k_width != 1 && k_width != 2 && k_width != 4) throw LayoutError("mma_sync_operand_b: k_width must be 1, 2 or 4");
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  const int rep_k = detail::enc::reps(who, 0, shape[0], 8 * k_width);
  const int rep_n = detail::enc::reps(who, 1, shape[1], 8 * wn);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(k_width, "register", "dim0") *
         LL::identity1D(4, "lane", "dim0") * LL::identity1D(8, "lane", "dim1") *
         LL::identity1D(2, "register", "dim0") * LL::identity1D(wn, "warp", "dim1") *
         LL::zeros1D(wm, "warp", "dim0") * LL::identity1D(rep_k, "register", "dim0") *
         LL::identity1D(rep_n, "register", "dim1");
}

}  // namespace tilejit::layout
