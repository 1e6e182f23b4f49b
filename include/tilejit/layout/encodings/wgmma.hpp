// tilejit/layout/encodings/wgmma.hpp — wgmma.mma_async.m64nNk16 accumulators
// (sm_90) as linear layouts, for every legal N, NPOT included.
//
// Source: NVIDIA PTX ISA, "Matrix Fragments for wgmma.mma_async.m64nNk16"
// (§9.7.15.5.1.1.1), accumulator D with .f32: N = 8·i for i = 1..32, each of
// the 128 threads of a warp group holds N/2 registers d0..d(N/2-1). Warp
// k = warp % 4 of the group owns rows 16k..16k+15, and inside a warp the
// pattern is mma.sync's C fragment repeated every 8 columns:
//
//   row = 16·(warp%4) + lane/4 + 8·((i%4)/2)
//   col = 2·(lane%4) + i%2 + 8·(i/4)
//
// The column chunk i/4 runs over N/8 values. When N/8 is NPOT (N = 24, 40,
// 48, 96, 192, ...) that is no obstacle: identity1D(N/8, "register", "dim1")
// writes the chunk in the digits of factor(N/8), e.g. N = 96: chunk digits
// [2,2,3], and dim1 gets digits [2,2,2 | 2,2,3] = factor(96). The layout is
// exact — 64·N elements, 128·N/2 (thread, register) pairs, a bijection; no
// padding and no masked registers. (Triton builds the same layout with
// nvidiaMmaTile on an instruction tile of [16, N] per warp.)
//
// N whose N/8 has a prime factor above 7 (N = 88, 104, 136, 152, 176, 184,
// 208, 232, 248) cannot be written in digits of 2, 3, 5, 7.
// try_wgmma_accumulator reports it; wgmma_padded_n(N) gives the next N' that
// can, and the layout for N' restricted to columns < N (the first N/2
// registers) is the hardware's layout for N, so a caller can pad visibly.
//
// Tiles and warps. warps_per_cta = {wM, wN}, wM a multiple of 4: warp w sits
// at (w % wM, w / wM) — dim0 minor (Triton's Hopper warp order {0, 1}), so
// that the four warps of each warp group stack along M as the hardware
// requires. A tile larger than {64·wM/4, N·wN} repeats through register digits
// above the instruction's, columns first.
#pragma once

#include "tilejit/layout/encodings/common.hpp"

namespace tilejit::layout {

/// True for the N of wgmma.m64nNk16 with f16/bf16 inputs: 8, 16, ..., 256.
[[nodiscard]] constexpr bool wgmma_legal_n(int n) { return n >= 8 && n <= 256 && n % 8 == 0; }

/// The smallest N' >= n that wgmma_accumulator can represent exactly (a
/// legal N whose N/8 is 7-smooth); n itself when it qualifies. Throws
/// LayoutError for an illegal n.
[[nodiscard]] constexpr int wgmma_padded_n(int n) {
  detail::enc::require(wgmma_legal_n(n), "wgmma_padded_n", "N must be a multiple of 8 in [8, 256]",
                       n);
  while (!detail::enc::is_smooth(n / 8)) n += 8;
  return n;
}

/// The f32 accumulator D of wgmma.mma_async.m64nNk16 (instruction N =
/// instr_n) for a tile of shape {M, N_tile} over warps_per_cta = {wM, wN}
/// warps, or why not.
///
/// Shape contract: instr_n legal (multiple of 8, 8..256) with instr_n/8
/// 7-smooth; wM a multiple of 4 and a power of two, wN a power of two; M a
/// multiple of 16·wM, N_tile a multiple of instr_n·wN, quotients 7-smooth.
/// Result: inputs register (instr_n/2 · repetitions), lane (32), warp
/// (wM·wN); outputs dim0 = M, dim1 = N_tile; a bijection. Register r, lane l,
/// warp w hold (d = r mod instr_n/2, the instruction's register; rep = the rest)
///
///   row = 16·(w % wM) + l/4 + 8·((d%4)/2) + 16·wM·repM
///   col = 2·(l%4) + d%2 + 8·(d/4) + instr_n·(w / wM) + instr_n·wN·repN
///
/// with r / (instr_n/2) = repN + (N_tile / (instr_n·wN))·repM.
/// Fails (no exception) when instr_n is legal but instr_n/8 has a prime
/// factor above 7; throws LayoutError for the other contract violations.
[[nodiscard]] constexpr Result<LinearLayout> try_wgmma_accumulator(const DimValues& shape,
                                                                   int instr_n,
                                                                   const DimValues& warps_per_cta) {
  constexpr const char* who = "wgmma_accumulator";
  detail::enc::require(wgmma_legal_n(instr_n), who, "N must be a multiple of 8 in [8, 256]",
                       instr_n);
  if (!detail::enc::is_smooth(instr_n / 8)) {
    return Failure{Reason("wgmma_accumulator: N = ")
                   << instr_n << " = 8·" << instr_n / 8 << " has the prime factor "
                   << detail::enc::rough_factor(instr_n / 8)
                   << ", which digits of 2, 3, 5, 7 cannot express; pad N to "
                   << wgmma_padded_n(instr_n)
                   << " (wgmma_padded_n) and mask columns >= " << instr_n};
  }
  detail::enc::require_2d(who, shape, warps_per_cta);
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  detail::enc::require(wm % 4 == 0, who,
                       "warps_per_cta[0] must be a multiple of 4 (a warp group stacks its 4 "
                       "warps along M)",
                       wm);
  const int rep_m = detail::enc::reps(who, 0, shape[0], 16 * wm);
  const int rep_n = detail::enc::reps(who, 1, shape[1], instr_n * wn);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(2, "register", "dim1") *
         LL::identity1D(4, "lane", "dim1") * LL::identity1D(8, "lane", "dim0") *
         LL::identity1D(2, "register", "dim0") * LL::identity1D(instr_n / 8, "register", "dim1") *
         LL::identity1D(wm, "warp", "dim0") * LL::identity1D(wn, "warp", "dim1") *
         LL::identity1D(rep_n, "register", "dim1") * LL::identity1D(rep_m, "register", "dim0");
}

/// As try_wgmma_accumulator, throwing LayoutError (a compile error in a
/// constant expression) with the reason when N cannot be expressed.
[[nodiscard]] constexpr LinearLayout wgmma_accumulator(const DimValues& shape, int instr_n,
                                                       const DimValues& warps_per_cta) {
  return try_wgmma_accumulator(shape, instr_n, warps_per_cta).value();
}

/// One instruction's tile: the accumulator of m64nNk16 over num_warps warps
/// stacked along M (num_warps a multiple of 4): shape {16·num_warps, n}.
///
/// Example: wgmma_accumulator(96): 128 threads × 48 registers; register
/// digits [2,2,2,2,3] (the radix-3 digit is the top of the column chunk
/// r/4 ∈ 0..11), dim1 digits [2,2,2,2,2,3]. Warp 1, lane 6, register 45
/// (d45: chunk 11, i%4 = 1) → (row 16 + 1 + 0, col 4 + 1 + 88) = (17, 93).
[[nodiscard]] constexpr LinearLayout wgmma_accumulator(int n, int num_warps = 4) {
  return wgmma_accumulator({16 * num_warps, n}, n, {num_warps, 1});
}

}  // namespace tilejit::layout
