// tilejit/layout/encodings/mma_sync.hpp — mma.sync.m16n8k16 fragments (sm_80+)
// as linear layouts: the f32 accumulator C/D and the 16-bit (.f16/.bf16)
// operands A and B.
//
// Source: NVIDIA PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type" (§9.7.14.5.8). With g = lane / 4 ("groupID") and t = lane % 4
// ("threadID_in_group"), a warp holds
//
//   C/D (16×8, f32, c0..c3):  row = g + 8·(i/2)           col = 2t + i%2
//   A  (16×16, a0..a7):       row = g + 8·((i/2)%2)       col = 2t + i%2 + 8·(i/4)
//   B  (16×8,  b0..b3):       row = 2t + i%2 + 8·(i/2)    col = g
//
// (B's row is K, its column N.) Each formula is linear in the bits of i and
// lane, so each is a product of identities — the same factorisation as
// Triton's nvidiaMmaTile (kWidth = 2 registers along the contiguous dim, 4
// lanes along it, 8 lanes across, then registers for the rest).
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

/// Operand A (M×K, .f16/.bf16) of mma.sync.m16n8k16 for a tile of shape
/// {M, K}, for the accumulator layout with warps_per_cta = {wM, wN}.
///
/// Shape contract: M a multiple of 16·wM, K a multiple of 16, quotients
/// 7-smooth. Result: inputs register (8·(K/16)·(M/16wM)), lane, warp
/// (wM·wN, the same warps as the accumulator); outputs dim0 = M, dim1 = K.
/// Register r, lane l, warp w hold
///
///   row = l/4 + 8·((r%8/2)%2) + 16·(w / wN) + 16·wM·repM
///   col = 2·(l%4) + r%2 + 8·((r%8)/4) + 16·repK,         r/8 = repK + (K/16)·repM
///
/// and warps differing only in w % wN hold the same elements (broadcast).
/// Example: mma_sync_operand_a({16, 16}, {1, 1}); lane 6, register 5
/// (a5) → (row 1, col 13): g = 1, t = 2, a5 = (g, 2t + 1 + 8).
[[nodiscard]] constexpr LinearLayout mma_sync_operand_a(const DimValues& shape,
                                                        const DimValues& warps_per_cta) {
  constexpr const char* who = "mma_sync_operand_a";
  detail::enc::require_2d(who, shape, warps_per_cta);
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  const int rep_m = detail::enc::reps(who, 0, shape[0], 16 * wm);
  const int rep_k = detail::enc::reps(who, 1, shape[1], 16);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(2, "register", "dim1") *
         LL::identity1D(4, "lane", "dim1") * LL::identity1D(8, "lane", "dim0") *
         LL::identity1D(2, "register", "dim0") * LL::identity1D(2, "register", "dim1") *
         LL::zeros1D(wn, "warp", "dim1") * LL::identity1D(wm, "warp", "dim0") *
         LL::identity1D(rep_k, "register", "dim1") * LL::identity1D(rep_m, "register", "dim0");
}

/// Operand B (K×N, .f16/.bf16) of mma.sync.m16n8k16 for a tile of shape
/// {K, N}, for the accumulator layout with warps_per_cta = {wM, wN}.
///
/// Shape contract: K a multiple of 16, N a multiple of 8·wN, quotients
/// 7-smooth. Result: inputs register (4·(K/16)·(N/8wN)), lane, warp (wM·wN);
/// outputs dim0 = K, dim1 = N. Register r, lane l, warp w hold
///
///   row (k) = 2·(l%4) + r%2 + 8·((r%4)/2) + 16·repK
///   col (n) = l/4 + 8·(w % wN) + 8·wN·repN,              r/4 = repK + (K/16)·repN
///
/// and warps differing only in w / wN hold the same elements (broadcast).
/// Example: mma_sync_operand_b({16, 8}, {1, 1}); lane 9, register 2 (b2) →
/// (k 10, n 2): g = 2, t = 1, b2 = (2t + 8, g).
[[nodiscard]] constexpr LinearLayout mma_sync_operand_b(const DimValues& shape,
                                                        const DimValues& warps_per_cta) {
  constexpr const char* who = "mma_sync_operand_b";
  detail::enc::require_2d(who, shape, warps_per_cta);
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  const int rep_k = detail::enc::reps(who, 0, shape[0], 16);
  const int rep_n = detail::enc::reps(who, 1, shape[1], 8 * wn);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(2, "register", "dim0") *
         LL::identity1D(4, "lane", "dim0") * LL::identity1D(8, "lane", "dim1") *
         LL::identity1D(2, "register", "dim0") * LL::identity1D(wn, "warp", "dim1") *
         LL::zeros1D(wm, "warp", "dim0") * LL::identity1D(rep_k, "register", "dim0") *
         LL::identity1D(rep_n, "register", "dim1");
}

}  // namespace tilejit::layout
