// tilejit/ir/cost.hpp — what a launch of a kernel amounts to, from its IR:
// matrix-product flops and bytes requested by its tile loads and stores,
// totalled over the grid. The profiler's launch hook reports them for every
// tilejit kernel (Proton's `launch_metadata`, without writing one).
//
//   const ir::CostPlan plan = ir::plan_cost(kernel);       // once per kernel
//   auto c = ir::evaluate_cost(plan, kernel, in);          // per launch
//   // c->flops, c->flops_width, c->bytes; nullopt: not derivable (below)
//
// What is counted, per execution of a node in one program:
//  - `dot` a[M,K]·b[K,N]: 2·M·N·K flops (every element of the tiles: a ragged
//    edge's masked rows are multiplied too). The width is the bit size of the
//    first dot's A operand (16 for f16 / bf16, 8 for f8 and i8, 32 for tf32
//    from f32 inputs); later dots of another width are added to it.
//  - `load`, `store`, `desc_load`, `desc_store`: the tile's elements × element
//    size — requested bytes, masked-off and out-of-bounds elements included.
//    A kernel that reads the same data in many programs (a GEMM reads each A
//    tile N/BLOCK_N times) requests more than it moves from DRAM: declare an
//    exact cost with `launch_cost` (runtime/kernel.hpp) where that matters.
// Elementwise arithmetic, reductions and index math count nothing.
//
// Loops multiply their body by their trip count, evaluated at launch from
// the kernel's scalar arguments, descriptor shapes, num_programs and
// constants. A grid-stride loop `for_range(program_id(a), hi, num_programs(a))`
// (a persistent kernel) runs hi iterations over the programs along axis a in
// all. A trip count that depends on the program id otherwise, on a load or on
// a loop-carried value (causal attention's key range, a work table) cannot be
// totalled without running the kernel: evaluate_cost returns nullopt then,
// unless that loop holds nothing counted.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "tilejit/ir/ir.hpp"

namespace tilejit::ir {

/// A launch's work, totalled over its grid.
struct LaunchCost {
  std::int64_t flops = 0;  ///< matrix-product flops (multiply and add counted apart); 0: none
  int flops_width = 32;    ///< bits of the products' inputs: 8, 16, 32 or 64
  std::int64_t bytes = 0;  ///< bytes of memory traffic; 0: none
  bool operator==(const LaunchCost&) const = default;
};

/// The per-kernel part of the cost: work per loop level and each loop's bounds. Built once.
struct CostPlan {
  struct Loop {
    int lo = -1, hi = -1, step = -1;  ///< node ids of the bounds
    int parent = -1;                  ///< enclosing loop (index into loops), -1: none
    int grid_axis = -1;               ///< >= 0: for (program_id(a); < hi; += num_programs(a))
    bool counted = false;             ///< the loop or a loop inside it holds counted work
  };
  std::vector<Loop> loops;
  /// Work of one execution of each level: [0] outside every loop, [i + 1] directly inside loops[i].
  std::vector<double> flops;
  std::vector<double> bytes;
  int flops_width = 0;  ///< 0: no dot
};

/// Launch-time values the bounds may read.
struct CostInputs {
  std::array<long long, 3> grid{1, 1, 1};
  /// The integer value of scalar parameter `param`; nullopt: not an integer.
  std::function<std::optional<long long>(int param)> scalar;
  /// shape[dim] (0 or 1) of descriptor parameter `param`.
  std::function<std::optional<long long>(int param, int dim)> desc_shape;
};

/// Walk `k` once (loops must be well nested, as ir::verify checks).
CostPlan plan_cost(const Kernel& k);

/// The launch's total, or nullopt when a counted loop's trip count cannot be
/// totalled (see the file comment). Totals saturate at INT64_MAX.
std::optional<LaunchCost> evaluate_cost(const CostPlan& plan, const Kernel& k, const CostInputs& in);

}  // namespace tilejit::ir
