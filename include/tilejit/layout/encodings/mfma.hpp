// tilejit/layout/encodings/mfma.hpp — AMD CDNA MFMA accumulators (wave64) as
// linear layouts: v_mfma_f32_32x32x8{f16,bf16} and v_mfma_f32_16x16x16{f16,bf16}.
//
// Source: AMD's instruction layouts (the CDNA3 ISA guide's MFMA section, as
// printed by ROCm's amd_matrix_instruction_calculator); Triton's
// AMDMfmaEncodingAttr::toLinearLayout builds the same maps. For a 64-lane
// wavefront holding the f32 result D (M×N, row i = M, column j = N), lane l
// and accumulator VGPR v:
//
//   32×32 (16 VGPRs):  i = 8·(v/4) + 4·(l/32) + v%4     j = l % 32
//   16×16 ( 4 VGPRs):  i = 4·(l/16) + v                 j = l % 16
//
// i.e. each lane holds a run of 4 consecutive rows of one column; lanes walk
// the columns first, then jump 4 rows; (32×32 only) registers jump 8 rows.
// Each is a product of identities: registers 4 along M, lanes N along N,
// lanes 64/N along M, (32×32) registers 4 more along M.
//
// Tiles and warps. warps_per_cta = {wM, wN}; warp w sits at (w / wN, w % wN)
// (dim1 minor, as Triton's MFMA layouts order warps). A tile larger than the
// warps' footprint repeats through register digits above the instruction's,
// columns first. The non-transposed layout is modelled (Triton's
// isTransposed = false); the transposed one swaps dim0 and dim1 in every image.
#pragma once

#include "tilejit/layout/encodings/common.hpp"

namespace tilejit::layout {

/// The f32 accumulator of an MFMA of m_dim × m_dim (32: v_mfma_f32_32x32x8f16,
/// 16: v_mfma_f32_16x16x16f16; bf16 variants alike) on wave64, for a tile of
/// shape {M, N} over warps_per_cta = {wM, wN} wavefronts.
///
/// Shape contract: m_dim ∈ {16, 32}; M a multiple of m_dim·wM, N a multiple of
/// m_dim·wN, quotients 7-smooth (NPOT allowed); wM, wN powers of two.
/// Result: inputs register (m_dim²/64 · repetitions), lane (64), warp
/// (wM·wN); outputs dim0 = M, dim1 = N; a bijection. Register r, lane l,
/// warp w hold (v = r mod m_dim²/64, rep = the rest, R = m_dim)
///
///   row = i(v, l) + R·(w / wN) + R·wM·repM
///   col = l % R   + R·(w % wN) + R·wN·repN,    r / (R²/64) = repN + (N/(R·wN))·repM
///
/// with i(v, l) from the file comment.
/// Example: mfma_accumulator({32, 32}, 32, {1, 1}); lane 37, register 6 →
/// (row 8·1 + 4·1 + 2, col 5) = (14, 5).
[[nodiscard]] constexpr LinearLayout mfma_accumulator(const DimValues& shape, int m_dim,
                                                      const DimValues& warps_per_cta) {
  constexpr const char* who = "mfma_accumulator";
  detail::enc::require(m_dim == 16 || m_dim == 32, who, "m_dim must be 16 or 32", m_dim);
  detail::enc::require_2d(who, shape, warps_per_cta);
  const int wm = warps_per_cta[0], wn = warps_per_cta[1];
  const int rep_m = detail::enc::reps(who, 0, shape[0], m_dim * wm);
  const int rep_n = detail::enc::reps(who, 1, shape[1], m_dim * wn);
  using LL = LinearLayout;
  return detail::enc::outs(2) * LL::identity1D(4, "register", "dim0") *
         LL::identity1D(m_dim, "lane", "dim1") * LL::identity1D(64 / m_dim, "lane", "dim0") *
         LL::identity1D(m_dim * m_dim / 256, "register", "dim0") *
         LL::identity1D(wn, "warp", "dim1") * LL::identity1D(wm, "warp", "dim0") *
         LL::identity1D(rep_n, "register", "dim1") * LL::identity1D(rep_m, "register", "dim0");
}

}  // namespace tilejit::layout
