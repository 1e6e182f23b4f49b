// tilejit/ir/lower_descriptors.hpp — descriptor loads as ordinary IR.
//
// A `desc_load` reads the [B0, B1] block of a 2-D tensor descriptor at
// element offsets (c0, c1) with out-of-bounds elements zero (TMA semantics).
// Targets without TMA (the interpreter, HIP, sm_80), and loads that the TMA
// pipeline does not take on sm_90a, run it as a masked load:
//
//   rows = c0 + arange<B0>, cols = c1 + arange<B1>
//   load(base + rows[:, None] * stride0 + cols[None, :],
//        mask = 0 <= rows < shape0 and 0 <= cols < shape1,
//        other = NaN if the descriptor's OobFill is nan (float types), else 0)
//
// with base/shape/stride read by `desc_field` nodes. A block of a rank-R
// descriptor (3..5) is read through its desc_view, the 2-D slice at the
// coordinates u of its other dims: base + sum(u[d] * strides[d]), rows =
// shape[row_dim] when every u[d] is in [0, shape[d]) and 0 otherwise (every
// element out of bounds, as TMA fills an R-d box there), cols = shape[R-1],
// row stride strides[row_dim]. A `trans` of a lowered
// block is folded into the load (the pointer tile is built transposed, so no
// register transpose is needed); `trans` of anything else is left as it is.
#pragma once
#include <functional>

#include "tilejit/ir/ir.hpp"

namespace tilejit::ir {

/// `k` with every desc_load and desc_store for which `keep(id)` is false
/// rewritten into masked loads and stores (see above); node ids change,
/// program order is kept. A desc_view is kept only where a kept block reads
/// it. With `keep` empty every desc_load and desc_store is rewritten.
[[nodiscard]] Kernel lower_descriptors(const Kernel& k, const std::function<bool(int)>& keep = {});

}  // namespace tilejit::ir
