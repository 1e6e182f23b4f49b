// tilejit/ir/axis_info.hpp — what is known statically about integer and
// pointer tiles, per dimension (Triton's AxisInfo analysis):
//
//   contiguity[d]   runs of this many elements along d hold consecutive values
//                   (addresses one element apart for pointers)
//   divisibility[d] every element whose index along d is a multiple of
//                   contiguity[d] (a run's first element along d, whatever its
//                   other indices) is a multiple of this (bytes for pointers);
//                   a power of two, capped at 2^30. Per dim, as in Triton: in
//                   x[i, j] = 16 i + j (j < 16) runs along j start at 16 i, so
//                   divisibility[1] is 16; in x[i, j] = i + j (overlapping
//                   rows) they start at i, so it is 1. A scalar's entries are
//                   all equal
//   constancy[d]    runs of this many elements along d hold equal values
//
// Runs start at multiples of their length. Codegen uses this to turn a
// thread's consecutive registers into one 4-, 8- or 16-byte access when the
// addresses are contiguous, aligned, and the mask is constant over the vector.
#pragma once
#include <array>
#include <vector>

#include "tilejit/ir/ir.hpp"

namespace tilejit::ir {

struct AxisInfo {
  std::array<int, kMaxRank> contiguity{1, 1};
  std::array<int, kMaxRank> constancy{1, 1};
  std::array<long long, kMaxRank> divisibility{1, 1};
};

/// One AxisInfo per node (meaningful for integer, bool and pointer values).
/// `spec` supplies what the launch arguments guarantee (16-byte aligned
/// pointers, integers divisible by 16, integers equal to 1).
std::vector<AxisInfo> analyze_axes(const Kernel& k, const Specialization& spec);

}  // namespace tilejit::ir
