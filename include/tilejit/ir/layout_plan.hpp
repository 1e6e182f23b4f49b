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

#include "tilejit/ir/axis_info.hpp"
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
  int layout = -1;                            // index into LayoutPlan::layouts (-1: a scalar)
  std::array<int, kMaxRank> dim_of{-1, -1};  // parent dim of each tile dim (-1: a size-1 dim)
  bool scalar = true;                         // rank-0 values live once per thread
  bool operator==(const TileLayout&) const = default;
};

struct LayoutPlan {
  std::vector<layout::LinearLayout> linear;  // the distinct parent layouts
  std::vector<Distributed> layouts;          // the same, in codegen's form
  std::vector<TileLayout> values;            // one per IR node
  /// For a dot node: the layouts its a and b operands are converted to (mma operand layouts).
  std::vector<std::array<TileLayout, 2>> dot_operands;
  /// For a dot node: 1 when it lowers to wgmma (sm_90a, operands staged in
  /// shared memory from their own layouts), 0 for mma.sync.
  std::vector<char> dot_wgmma;
  /// For a wgmma dot: 1 when operand a comes from registers and b is a TMA
  /// block (wgmma's register-A form, e.g. P·V in attention). Its a operand is
  /// converted to dot_operands[id][0]: the wgmma accumulator layout of an
  /// [M, K] tile, which per warp is the A fragment of m16n8k16 (PTX ISA,
  /// "Register fragment for matrix A" of wgmma .m64nNk16) — so an operand
  /// computed from another wgmma's accumulator needs no data movement.
  std::vector<char> dot_rs;
  /// For a dot node on AMD CDNA (gfx90a, gfx94x): the MFMA size it lowers to
  /// (32: v_mfma_f32_32x32x8, 16: v_mfma_f32_16x16x16; 0 = not MFMA), and the
  /// wavefront split {wM, wN} of its accumulator (layout/encodings/mfma.hpp).
  /// Its operands are staged through shared memory from their own layouts.
  std::vector<int> dot_mfma;
  /// The warp split {wM, wN} of an MFMA dot's accumulator (above), or of a
  /// wgmma dot whose warp groups share its rows: {4, g} when M = 64 and the
  /// kernel has g = num_warps / 4 warp groups — each issues m64n(N/g) on its
  /// own N/g columns with the same A (B a TMA block read in place at the
  /// group's columns, A a block or registers copied to every group). {0, 0}
  /// for every other dot (a wgmma dot's warp groups then split M).
  std::vector<std::array<int, 2>> dot_split;
  /// 1 for values that live in shared memory, not registers: descriptor
  /// blocks copied there by TMA (desc_load left in the IR by codegen's TMA
  /// pipeline) and their `trans` views. They have no register layout.
  std::vector<char> in_smem;
  std::vector<std::string> diagnostics;      // layout choices and conversions, reported with the kernel

  /// The layout an operand of `node` must be in (its own, converted if different).
  TileLayout operand_layout(const Kernel& k, int node, int which) const;
};

/// The layout of a value of type `to` holding, in row-major order, the elements of a value of type `from` in layout
/// `t` of `plan`, with every thread keeping the elements it holds (a reshape that moves nothing): the value's own
/// layout (its parent's dims it spans, in tile order) with its output digits regrouped (layout::LinearLayout::
/// reshape_outs, last dim minor). Out dims dim0[, dim1]. Fails with kDigitOrder when the digits do not split as `to`
/// needs (96 = [2,2,2,2,2,3] as [32, 3]), or kUnsatisfied for a size-1 dim or a slice of a larger layout.
layout::Result<layout::LinearLayout> reshaped_layout(const LayoutPlan& plan, const TileLayout& t, const Type& from, const Type& to);

/// Elements one vector access of a load or store moves along tile dim
/// `tile_dim` when its value (of type `type`) is in layout `t` of `d`: the
/// thread's run of registers 0, 1, 2, ... holding consecutive coordinates
/// along that dim and nothing else, limited by the pointers' contiguity and
/// alignment (`ptr`), the mask's constancy (`mask`, or null) and 16 bytes; 1
/// when it would be under 4 bytes or the element is not 2 or 4 bytes. This
/// is codegen's rule for vector loads and stores (which vectorises along the
/// tile's last dim), so the plan can compare candidate layouts by it.
int vector_elements(const Distributed& d, const TileLayout& t, const Type& type, const AxisInfo& ptr, const AxisInfo* mask,
                    int tile_dim);

/// How many warp groups issue dot node `dot` [M, N] of `k` side by side along N on sm_90a: g = num_warps / 4 when
/// M = 64 (one warp group's rows), g is 2 or 4, N / g is a wgmma N for the operand type (a multiple of 8 with N/8
/// 7-smooth; i8 8, 24 or a multiple of 16), an MN-major B (not a trans) splits at whole 128-byte slabs (N / g ·
/// size a multiple of 128: each group's descriptor starts at a slab), and no other dot of k has the extent [64, N]
/// (dots that meet must lower alike); 1 otherwise. The TMA planner (codegen's async_loads) and assign_layouts both
/// ask it, so a block kept in shared memory for such a dot always finds the dot lowered to wgmma.
int wgmma_groups_along_n(const Kernel& k, int dot, int num_warps);

/// AMD MFMA: the consecutive K elements each lane holds for operands of type `et` on `arch` (gfx90a, gfx94x) — f16
/// and bf16 4, f32 1, i8 8 on gfx94x and 4 on gfx90a, f8 8 (gfx94x) — so an R x R instruction takes K = kw · 64 / R;
/// 0 for a type with no MFMA there. From the CDNA2 / CDNA3 ISA's MFMA tables.
int mfma_k_width(DType et, const std::string& arch);

/// Assign layouts for `k` launched with `num_warps` warps of `warp_size`
/// lanes. Tiles that interact elementwise share a parent (a *family*, one
/// per 2-D tile extent); a dot's accumulator family gets the mma.sync
/// accumulator layout, over the warp split {wM, wN} that minimises the
/// operand registers per thread (M/wM + N/wN; ties go to wM), and its
/// operands the mma operand layouts of that split. A family whose values
/// leave it only as operand a (or only as operand b) of dots is an *anchor
/// candidate*: its parent may be that operand layout, so its loads land in
/// the fragment registers. Other families are blocked. Where an operand's
/// layout still differs from its user's, codegen converts it (through shared
/// memory), and the plan says so in its diagnostics. 1-D index chains that
/// feed two families are best cloned first (rematerialize, remat.hpp): the
/// plan then has no 1-D conversion left to make.
///
/// Contiguity decides whether a candidate is anchored (Triton's coalescing
/// rule, made to compete with anchoring). For each load of the family that
/// runs as often as the dot (inside the dot's innermost loop, or anywhere when
/// the dot is in no loop), the plan computes the bytes per access codegen
/// would emit (vector_elements, under the specialisation launches usually get:
/// pointers 16-byte aligned, integers divisible by 16; AxisInfo gives the
/// contiguity) in the operand layout and in the family's blocked layout. The
/// family is *blocked instead* — coalesced loads, one conversion to the
/// operand layout at the dot — when some such load moves fewer than 16 bytes
/// per access anchored but 16 blocked, and none moves fewer blocked than
/// anchored; otherwise it is anchored (already vectorised, or nothing to
/// gain). A load outside the dot's loop (a Q tile read once) stays anchored:
/// blocking it would put a conversion in every iteration to save one access.
/// For row-major operands the operand layouts give A [M, K] 4-byte pairs along
/// K and B [K, N] (V in P·V) 2-byte scalars; a blocked tile gets 16 bytes
/// along its contiguous last dim. Both choices are reported in diagnostics.
///
/// `vector_any_dim`: codegen vectorises accesses along any tile dim, not only
/// the last. Then a blocked family whose loads and stores are all more
/// contiguous along dim 0 than dim 1 (Kᵀ [D, N] read from a row-major K)
/// runs its lanes and vectors along dim 0, and access widths are compared
/// over both dims. Off by default: today's codegen (vector_width) vectorises
/// the last dim only, and a dim-0 blocked layout would then gain nothing; the
/// diagnostics name each family whose accesses are contiguous along dim 0
/// only (one element per access until then).
///
/// `arch` selects the dot lowering: for "sm_90a", a dot whose accumulator is
/// [16·num_warps, N] (M a multiple of 64: one warp group per 64 rows), N a
/// legal wgmma N (multiple of 8, at most 256, N/8 7-smooth) and K a multiple
/// of 64 lowers to wgmma; so does a [64, N] one whose warp groups can split N
/// (wgmma_groups_along_n > 1) when B is a TMA block and A a block or
/// registers; otherwise (and on other targets) to mma.sync.
/// For "gfx90a" / "gfx94x" (wave64 CDNA), a dot lowers to MFMA: its
/// accumulator family gets the MFMA accumulator layout (32x32 tiles when the
/// split allows, else 16x16), its operands stay in their own layouts.
/// A dot whose operands are both shared-memory values (desc_load, trans of
/// one) has no staging buffer, so the 48 KiB staging limit does not apply;
/// on sm_90a it must lower to wgmma (Unsupported otherwise); elsewhere they are
/// cp.async blocks that mma.sync reads in place.
///
/// Whole rows per warp: an mma.sync dot whose B is read from shared memory and
/// whose accumulator's family, or operand a's, has a row reduction (a softmax:
/// S = Q·Kᵀ, then P·V) splits its warps [num_warps, 1] when M allows — every
/// warp holds whole rows (FlashAttention-2's split), so the reductions are
/// shuffles inside a warp and P's accumulator registers are its A fragments —
/// with every dot of its family (they share the accumulator layout). If that
/// leaves a reduction's result meeting a family of the other split, the plan
/// is made without it and a diagnostic says so.
LayoutPlan assign_layouts(const Kernel& k, int num_warps, int warp_size, const std::string& arch = "",
                          bool vector_any_dim = false);

}  // namespace tilejit::ir
