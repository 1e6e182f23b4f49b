// tilejit/layout/encodings/common.hpp — small pieces shared by the encoding
// factories (slice, mma.sync, wgmma, NVMMA shared memory, AMD MFMA).
//
// Every hardware encoding in this folder is written the way Triton writes
// it in LinearLayoutConversions.cpp: a product of one-dimensional pieces,
//
//     L = outs(dim0, dim1) * identity1D(a, "register", "dim1")
//                          * identity1D(b, "lane", "dim1") * ...
//
// read left to right, minor first. Each factor adds digits *above* the ones
// already present in its input and output dimension (see operator* in
// linear_layout.hpp), so the order of the factors is the order in which a
// thread's register number, lane number and warp number walk the tile. The
// leading `outs(...)` only fixes the order of the output dimensions to
// dim0, dim1, ... whatever the first factor touches.
//
// Conventions shared by the factories
// -----------------------------------
// * Inputs are "register", "lane", "warp" (always present, size 1 if unused);
//   shared-memory layouts have the single input "offset".
// * Outputs are "dim0" (rows, M or K) and "dim1" (columns, N or K).
// * A tile larger than one instruction's (or one warp group's) footprint is
//   covered by repetition, and repetitions are register digits above the
//   instruction's own registers: columns (dim1) first, then rows (dim0) —
//   Triton's repOrder for accumulators. The number of repetitions may be any
//   2^a·3^b·5^c·7^d, so a 96-wide or 48-high tile is exact.
// * A shape the hardware footprint does not divide is rejected with a
//   LayoutError that names the dimension and both numbers (a compile error
//   in a constant expression).
#pragma once

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace tilejit::layout::detail::enc {

/// A layout with no inputs and the output dims dim0..dim(rank-1), each of
/// size 1: the left-most factor of every encoding product.
[[nodiscard]] constexpr LinearLayout outs(int rank) {
  LayoutBuilder b;
  for (int d = 0; d < rank; ++d) b.add_out_dim(kStandardOutNames[d], DigitSystem{});
  return b.build();
}

/// True when n is a product of 2, 3, 5 and 7 only (n >= 1): a size the
/// digit systems can represent exactly.
constexpr bool is_smooth(int n) {
  if (n < 1) return false;
  for (int p : {2, 3, 5, 7}) {
    while (n % p == 0) n /= p;
  }
  return n == 1;
}

/// The prime factor of n that is not 2, 3, 5 or 7 (the smallest one), or 1.
constexpr int rough_factor(int n) {
  for (int p : {2, 3, 5, 7}) {
    while (n > 1 && n % p == 0) n /= p;
  }
  for (int q = 11; q <= n; q += 2) {
    if (n % q == 0) return q;
  }
  return n;
}

/// Throws LayoutError "<who>: <what>" with value v unless ok.
constexpr void require(bool ok, const char* who, const char* what, int v) {
  if (!ok) throw_layout_error(Reason(who) << ": " << what << " (got " << v << ")");
}

/// Requires rank-2 shape and warps_per_cta with power-of-two warp counts.
constexpr void require_2d(const char* who, const DimValues& shape, const DimValues& warps) {
  if (shape.rank != 2 || warps.rank != 2) {
    throw_layout_error(Reason(who) << ": shape and warps_per_cta must have rank 2 (got "
                                   << shape.rank << " and " << warps.rank << ")");
  }
  for (int d = 0; d < 2; ++d) {
    if (warps[d] < 1 || !is_smooth(warps[d])) {  // 12 warps = 2·2·3: a mixed-radix warp digit
      throw_layout_error(Reason(who) << ": warps_per_cta[" << d << "] = " << warps[d]
                                     << " is not a product of 2, 3, 5 and 7");
    }
  }
}

/// Number of repetitions of a footprint of `cover` elements along dim d of
/// a tile of `size`: size / cover. Throws unless cover divides size and the
/// quotient is 7-smooth.
constexpr int reps(const char* who, int d, int size, int cover) {
  if (size < 1 || size % cover != 0) {
    throw_layout_error(Reason(who) << ": shape[" << d << "] = " << size
                                   << " is not a positive multiple of the footprint " << cover
                                   << " of the instruction and warps along dim" << d);
  }
  if (!is_smooth(size / cover)) {
    throw_layout_error(Reason(who)
                       << ": shape[" << d << "] = " << size << " needs " << size / cover
                       << " repetitions, which has the prime factor " << rough_factor(size / cover)
                       << "; sizes must be products of 2, 3, 5 and 7");
  }
  return size / cover;
}

}  // namespace tilejit::layout::detail::enc
