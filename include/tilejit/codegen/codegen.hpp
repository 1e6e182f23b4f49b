// tilejit/codegen/codegen.hpp — IR -> self-contained CUDA or HIP C++ text.
//
// The text includes no header: a small prelude of our own supplies the
// half-precision conversions and, for HIP compiled outside hiprtc, the device
// builtins. Output is deterministic: node ids name values, nodes are emitted
// in program order, so the same kernel and options give the same bytes (the
// kernel cache keys on them).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "tilejit/ir/ir.hpp"
#include "tilejit/ir/layout_plan.hpp"

namespace tilejit::codegen {

enum class Dialect { cuda, hip };

struct Target {
  Dialect dialect = Dialect::cuda;
  std::string arch = "sm_90a";  // "sm_80", "sm_90a", "gfx90a", "gfx942"
  int warp_size = 32;           // 64 for CDNA (gfx9xx)
};

/// The default target for an arch string: dialect and warp size derived from it.
/// Throws InvalidArgument for an arch that is neither "sm_NN[a]" nor "gfxNNN".
Target target_for(const std::string& arch);

/// The warp counts a program may have: a power of two in [1, 32], or whole warp groups of a 7-smooth count
/// (12, 20, 24, 28): the warp digits of a layout are then mixed-radix (12 = 2·2·3), e.g. three consumer warp
/// groups of 64 rows for a 192-row wgmma tile (FlashAttention-3's D = 64 forward).
constexpr bool valid_num_warps(int n) {
  if (n < 1 || n > 32) return false;
  if ((n & (n - 1)) == 0) return true;
  return n % 4 == 0 && (n == 12 || n == 20 || n == 24 || n == 28);
}

/// Throws InvalidArgument naming `n` and the rule when !valid_num_warps(n).
void require_valid_num_warps(int n);

struct Options {
  int num_warps = 4;            // valid_num_warps: a power of two in 1..32, or 12, 20, 24, 28
  bool rematerialize = true;    // clone cheap index chains instead of converting them (ir/remat.hpp)
  int num_stages = 3;           // TMA (sm_90a) or cp.async (Options::cp_async) pipeline depth, 1..8
  /// sm_90a: one extra producer warp group (setmaxnreg down to 24 registers;
  /// its first lane issues every TMA copy of the pipelined loops) while the
  /// num_warps consumer warps (setmaxnreg up to 240) release stages through
  /// per-stage "empty" mbarriers instead of a CTA barrier per iteration. Applied when
  /// every pipelined loop is outermost, or directly inside one top-level loop over
  /// work items (a persistent kernel; blocks that loop loads itself are copied once
  /// per iteration, one buffer each), with loop bounds and block coordinates
  /// computed from scalars (else a diagnostic says why not). Other targets ignore it.
  bool warp_specialize = false;
  /// With warp_specialize and two consumer warp groups (num_warps = 8): the warp
  /// groups take turns issuing the wgmma of each pipelined-loop iteration
  /// (named barriers around the span from the iteration's first wgmma to its
  /// last), so one group's non-tensor work overlaps the other's products
  /// (FlashAttention-3's ping-pong schedule, arXiv 2407.08608 §3.1). Needs
  /// exactly one pipelined loop; nested in a persistent loop, the turns continue
  /// from one work item to the next (handed over once before that loop and
  /// taken back once after it).
  bool pingpong = false;
  /// sm_90a: a wgmma with A in registers (attention's P·V) is left in flight
  /// until a node reads its result, as one with both operands in shared
  /// memory is, so e.g. the softmax of S_j overlaps O += P_{j-1}·V_{j-1}
  /// (FlashAttention-3's intra-warp-group overlap, arXiv 2407.08608 §3.2).
  /// false: it is waited for at once (the code of v0.5).
  bool overlap_register_wgmma = true;
  /// sm_90a: the wait that retires a deferred wgmma is also issued in a branch on the row reductions computed
  /// since that wgmma (NaN-checks ptxas cannot evaluate), so ptxas keeps it after them instead of hoisting it
  /// to the previous wait: attention's softmax then runs under O += P·V in the SASS. Off by default: with two
  /// consumer warp groups that overlap measured 0-5% slower on the H200 (docs/perf.md v0.17 call 9).
  bool anchor_deferred_waits = false;
  /// sm_90a, with warp_specialize: programs run in thread-block clusters of
  /// num_ctas (1, 2 or 4) consecutive programs along grid x
  /// (`__cluster_dims__(num_ctas, 1, 1)`; Generated::num_ctas says whether it
  /// was applied, and the launch's grid x must be a multiple of that: a kernel
  /// generated without the cluster takes any grid). A descriptor block loaded with `load_multicast` in a pipelined
  /// loop is read from L2 once per cluster — the cluster's first program issues
  /// one TMA copy multicast into every program's shared memory — and each
  /// consumer warp releases a stage in every program of the cluster. 1: no
  /// cluster. Where warp specialisation is not applied, 1 with a diagnostic.
  /// The programs of a cluster must run every pipelined loop (and the loop
  /// over work items around it) the same number of times, and a multicast
  /// block's coordinates must agree across them: unless their values are
  /// built from parameters, constants, grid sizes, program ids along y / z,
  /// program_id(0) / c (c a multiple of num_ctas) and loads at such
  /// addresses, 1 with a diagnostic (e.g. a persistent loop starting at
  /// program_id(0), a causal bound).
  int num_ctas = 1;
  /// sm_90a: a Desc::store of a block whose rows are whole 128-byte slabs (2- or 4-byte elements, rows a multiple
  /// of 8) goes through TMA: every consumer thread writes its elements into a 128B-swizzled shared staging buffer
  /// (one per store), a proxy fence and a barrier of the consumers, then one thread issues a
  /// `cp.async.bulk.tensor` store per slab and commits a bulk group; the buffer is written again only after that
  /// group has read it (`cp.async.bulk.wait_group.read`, e.g. one tile later in a persistent loop), and the program
  /// waits for its stores before it exits. Blocks of more than two slabs whose registers each lie in one slab are
  /// staged slab by slab through two slab buffers (one bulk group per slab). Rows and columns past the descriptor's
  /// shape are clipped by TMA. TMA writes whole 16-byte chunks and faults on a box starting mid-chunk, so a store is
  /// taken only when the specialisation marks the descriptor's rows as whole 16-byte chunks (Specialization::kDiv16,
  /// set by the launch) and its column coordinate is provably a multiple of 16 bytes. Other targets and other
  /// stores: the masked store, with a diagnostic naming the rule (false: always).
  bool tma_store = false;
  /// CUDA targets from sm_80 without wgmma (sm_80, sm_86, sm_89, sm_90): a descriptor block loaded in a loop, at
  /// coordinates computed from the induction variable and loop-invariant values, and read only by mma.sync dots
  /// (as operand a, as operand b through `trans`, or directly as operand b) is not loaded into registers: every
  /// thread copies its share with `cp.async` into a ring of num_stages stages in shared memory (the 128B-swizzled
  /// slabs a TMA box uses), iteration i + num_stages - 1's copies in flight while iteration i computes
  /// (`cp.async.wait_group`, then one CTA barrier per iteration), and the dots read their fragments from there.
  /// Chunks that straddle the tensor's edge are written element by element with the descriptor's fill. A ring
  /// that does not fit the target's shared memory (sm_80 163 KiB, sm_86 / sm_89 99 KiB, sm_90 227 KiB) is not
  /// made: the kernel gets the masked loads and a diagnostic naming the bytes and the limit. false: masked loads
  /// into registers (converted to the operand layouts).
  bool cp_async = true;
  /// With cp_async: a block loaded once, outside every loop, and read only by mma.sync dots is copied by
  /// cp.async into shared memory once (every thread, then a barrier) and read there with ldmatrix at each use,
  /// instead of living in registers for the whole kernel. For kernels whose resident operands do not fit the
  /// registers beside the accumulators (the attention backward's K and V); off by default (a query block read
  /// every iteration is cheaper from registers).
  bool cp_async_resident = false;
  /// Device events (lang/events.hpp): the kernel takes one more parameter, last, `tj_evbuf* tj_events` (null:
  /// nothing is recorded), and records into it the DSL's async_begin / async_end, each program's span ("program":
  /// begin at entry, end at exit, by its first thread) and, for every TMA pipeline, a pair per stage ("TMA loop
  /// %L": begin where its copies are issued — by the producer warp when warp-specialised — and an end in each
  /// consumer warp group when it has waited for them; id = the ring's iteration). Generated::event_sites names
  /// the sites. false: async_begin / async_end generate nothing and the signature is the kernel's own.
  bool device_events = false;
  /// With device_events, where wgmma is used: also a pair per wgmma group ("wgmma": begin at its commit, end at
  /// the first wait_group that saw it complete; id = the warp group << 24 | the group's sequence number in it).
  /// These sit on the consumer warp groups' critical path: a warp-specialised 4096³ GEMM ran 1.35x slower with
  /// them, 1.04x without (docs/profiler.md "Device events").
  bool device_events_wgmma = false;
};

struct Generated {
  std::string source;
  std::string kernel_name;
  int threads = 0;        // block size (consumer warps + the producer warp when warp-specialised)
  int shared_bytes = 0;   // static shared memory the kernel declares
  int dynamic_shared_bytes = 0;  // dynamic shared memory the launch must pass (> 48 KiB: opted in)
  /// Descriptor parameters whose loads go through TMA: the launch argument must
  /// carry an encoded map whose swizzle spans one box row (tma_boxes).
  std::vector<int> tma_params;
  /// The TMA box each of tma_params is copied with, {rows, elements per row}:
  /// the block's rows by one slab, the swizzle span its wgmma reads — 128
  /// bytes, or 64 / 32 when the rows are not a multiple of 128 bytes but are of
  /// 64 / 32 (a [rows, 96] bf16 block: three 64-byte slabs, 64B swizzle); the
  /// launch encodes the map with that swizzle. A block wider than one slab is
  /// copied as several boxes. Rows that are no multiple of 32 bytes keep
  /// 128-byte slabs, the last one partly used (a diagnostic names the ratio).
  std::vector<std::array<int, 2>> tma_boxes;
  std::vector<std::string> diagnostics;  // layout choices and fallbacks
  int num_ctas = 1;       // programs per cluster along grid x (__cluster_dims__), 1: none; grid x must be a multiple
  /// With Options::device_events: the name of each event site (a record's `site` indexes it): the IR's
  /// event_sites first, then "program", one "TMA loop %L" per TMA pipeline and, with device_events_wgmma, "wgmma"
  /// if the kernel uses it.
  std::vector<std::string> event_sites;
};

/// Generate the kernel text. `spec` may be empty (no specialisation).
/// Throws InvalidArgument for bad options, Unsupported for IR this version
/// cannot lower.
Generated generate(const ir::Kernel& k, const ir::Specialization& spec, const Target& t, const Options& o);

}  // namespace tilejit::codegen
