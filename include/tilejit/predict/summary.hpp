// tilejit/predict/summary.hpp — what a compiled-config kernel is, statically, and what one launch of it amounts to:
// the predictor's raw facts (DESIGN §7), before they become features (features.hpp).
//
//   const predict::KernelSummary s = predict::summarize(core);       // once per kernel: IR walk + codegen, no JIT
//   const predict::LaunchSummary l = predict::summarize_launch(core, grid, args);  // per launch: microseconds
//
// A KernelSummary comes from the IR (dots and their tile shapes, loop-carried tiles, loads and stores) and from the
// generated source (block size, shared memory, wgmma, TMA, warp specialisation). Generating the source is the
// code generator's work only — milliseconds — not NVRTC's. A LaunchSummary is ir/cost.hpp's launch total (flops by
// width, requested bytes) with the grid's program count; where that total is not derivable (a trip count that
// depends on the program, as in causal attention) flops and bytes are NaN, which the ranking model reads as missing.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "tilejit/runtime/kernel.hpp"

namespace tilejit::predict {

/// Static facts of one kernel compiled with one config. Register figures are 32-bit registers per thread.
struct KernelSummary {
  int num_warps = 4;         ///< CompileOptions::num_warps
  int num_stages = 1;        ///< CompileOptions::num_stages
  int threads = 0;           ///< block size of the generated kernel (producer warps included); 0: codegen failed
  int shared_bytes = 0;      ///< static + dynamic shared memory per program (bytes)
  int num_ctas = 1;          ///< programs per cluster
  bool wgmma = false;        ///< the products are wgmma (sm_90a)
  bool tma = false;          ///< some descriptor loads go through TMA
  bool warp_specialized = false;  ///< producer / consumer warp groups (setmaxnreg)
  bool codegen_ok = false;   ///< false: the code generator refused the kernel for the device's target (fields above
                             ///< from it are 0 / false); the reason is in `codegen_error`
  std::string codegen_error;
  int dots = 0;              ///< dot nodes in the IR
  int dot_m = 0, dot_n = 0, dot_k = 0;  ///< the largest dot's tile (by M·N·K)
  int dot_bits = 0;          ///< bits of the first dot's A operand (16: f16 / bf16, 8: f8 / i8, 32: tf32); 0: no dot
  int loads = 0, stores = 0;  ///< memory operations (pointer and descriptor) in the IR
  int loops = 0;             ///< structured loops
  double carried_regs = 0;   ///< registers per thread of the tiles loop-carried through the kernel's loops
  double tile_regs = 0;      ///< registers per thread of the largest tile value
  bool operator==(const KernelSummary&) const = default;
};

/// One launch: its program count and ir/cost.hpp's totals.
struct LaunchSummary {
  long long programs = 1;  ///< grid.x · grid.y · grid.z
  double flops = 0;        ///< matrix-product flops of the launch; NaN: not derivable statically
  double bytes = 0;        ///< requested bytes of its loads and stores; NaN: not derivable statically
  int flops_width = 0;     ///< bits of the products' inputs (0: no dot)
};

/// Summarise a kernel: walks its IR and generates (never compiles) its source for the device's target — sm_90a
/// for the interpreter. Never throws for a kernel the code generator refuses: codegen_ok = false then.
KernelSummary summarize(const runtime::KernelCore& k);
/// The IR part of summarize() alone (what a kernel is before code generation), for `threads` threads per program.
KernelSummary summarize_ir(const ir::Kernel& k, int num_warps, int num_stages, int warp_size);

/// What a launch of `k` with `g` and `args` amounts to (KernelCore::launch_cost). Throws InvalidArgument for a grid
/// dimension < 1.
LaunchSummary summarize_launch(const runtime::KernelCore& k, const Grid& g, std::span<const runtime::ArgSlot> args);

}  // namespace tilejit::predict
