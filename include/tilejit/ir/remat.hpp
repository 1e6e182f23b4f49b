// tilejit/ir/remat.hpp — rematerialisation of cheap 1-D index chains.
//
// A 1-D value has one layout: the slice of the one family it is expanded
// into (layout_plan.hpp). When it is expanded into two families whose
// layouts differ — GEMM's `rk = k0 + arange<BK>()` is dim 1 of the A tile
// and dim 0 of the B tile; `rm` indexes both the A tile and the accumulator
// — one of the uses needs a conversion through shared memory, two barriers
// each time, inside the K loop for rk. Recomputing the value in the other
// layout costs a few integer instructions per register instead: an arange
// is free in any layout (its registers are coordinates), and adding a
// scalar or comparing against one is one instruction.
//
// `rematerialize` finds every expand_dims whose 1-D operand would be
// converted, and when everything that operand is computed from (its 1-D
// ancestors; scalars are shared as they are) is cheap and pure — arange,
// constant, broadcast, expand_dims of a scalar, add/sub/mul/min/max,
// bitwise ops, compares, where, cast, neg, not, addptr — it clones that
// chain for the uses that want the other layout, grouped by the layout they
// want and the loop they sit in. Clones are emitted just before the first
// use of their group, so they live in the same loop body as their uses (a
// loop-invariant clone is left to the CUDA compiler to hoist). Chains that
// reach a load, a reduction, a loop-carried value or a division stay
// converted. The result is a new kernel (node ids change) in def-before-use
// order that computes exactly what `k` computes.
//
// A reshape of a 1-D value into a 2-D tile is treated the same way: it wants
// its operand in the result's layout flattened (ir::reshaped_layout), so that
// every thread already holds its elements; when the operand's class took
// another layout (one `arange` reshaped into two shapes) and its chain is
// cheap, the chain is cloned for the reshape instead of the elements moving
// through shared memory.
#pragma once
#include <string>
#include <vector>

#include "tilejit/ir/ir.hpp"

namespace tilejit::ir {

struct Rematerialized {
  Kernel kernel;                         // `k` with the clones; equal to `k` when nothing was cloned
  std::vector<std::string> diagnostics;  // one line per cloned chain (node ids of the new kernel), and per chain left converted
  int cloned_nodes = 0;
};

/// Clone cheap 1-D chains instead of converting them (see above). Uses the
/// layout plan of `k` for `num_warps` warps of `warp_size` lanes on `arch`
/// (the code generator's target, e.g. "sm_90a", "sm_80", "gfx942"; empty:
/// no tensor-core lowering) to find the conversions — the same plan the
/// code generator will make, so dots lowered to wgmma or MFMA decide which
/// uses convert. A kernel with none comes back unchanged.
[[nodiscard]] Rematerialized rematerialize(const Kernel& k, int num_warps, int warp_size, const std::string& arch = "");

}  // namespace tilejit::ir
