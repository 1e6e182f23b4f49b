// tilejit/ir/layout_plan.hpp — the layout-assignment pass: which hardware
// thread holds which element of every tile value.
//
// Every kernel gets one *parent* layout (a blocked mixed-radix linear layout
// over the largest tile shape, layout/blocked.hpp), and every tile value is
// that parent seen through a *dim map*: tile dim d is parent dim dim_of[d],
// and parent dims the tile lacks are broadcast (their digits map to zero, a
// slice layout). Because all values share the parent's (register, lane, warp)
// inputs, broadcast and expand_dims cost nothing and elementwise operations
// are register-wise. Reductions combine registers, then lanes (shuffles),
// then warps (shared memory), along the digits whose image lies in the
// reduced dim.
//
// `Distributed` is the parent in the form codegen consumes: per input digit
// (register, lane or warp), its radix, its stride in that input's index, and
// its image in each parent dim.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "tilejit/ir/ir.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace tilejit::ir {

struct InputDigit {
  int radix = 2;
  int stride = 1;                      // value of this digit's unit in its input's index
  std::array<int, kMaxRank> image{0, 0};  // index value in each parent dim
};

struct Distributed {
  int rank = 0;
  std::array<int, kMaxRank> shape{1, 1};
  int registers = 1, warp_size = 32, num_warps = 1;
  std::vector<InputDigit> reg, lane, warp;
  /// True when images of different input digits never share an output digit
  /// and every image digit is 0 or 1: coordinates are then plain sums.
  /// Otherwise (radix 2 only) they combine by XOR.
  bool additive = true;
  std::string description;  // the layout in words, for the generated source's comments

  /// Coordinate along parent dim `d` contributed by register index `r`.
  int register_coord(int r, int d) const;
};

/// Convert a layout with in-dims register/lane/warp and out-dims dim0[,dim1].
/// Throws Unsupported when its digits mix in a way codegen cannot lower yet
/// (non-additive with radix > 2).
Distributed distributed_from(const layout::LinearLayout& l, int warp_size);

struct TileLayout {
  std::array<int, kMaxRank> dim_of{-1, -1};  // parent dim of each tile dim (-1: size-1 dim)
  bool scalar = true;                         // rank-0 values live once per thread
};

struct LayoutPlan {
  layout::LinearLayout parent;
  Distributed dist;
  std::vector<TileLayout> values;  // one per IR node
  std::vector<std::string> diagnostics;  // fallbacks and choices, reported with the kernel
};

/// Assign layouts for `k` launched with `num_warps` warps of `warp_size`
/// lanes. Throws Unsupported (naming the node) for tile shapes this version
/// cannot relate to one parent, e.g. a 1-D tile used along both dims.
LayoutPlan assign_layouts(const Kernel& k, int num_warps, int warp_size);

}  // namespace tilejit::ir
