// examples/gemm/matmul_v2.hpp — rung 2 of the GEMM ladder: tiles born in the
// layout the tensor cores read. C[M,N] = A[M,K] · B[K,N], row-major, f16/bf16
// inputs, f32 accumulation and output; same interface as rung 1 (MatmulV1).
//
// The kernel text is rung 1's: the idea of this rung lives in the compiler,
// in where it puts each tile.
//
//  * Rung 1 loaded the A and B tiles in a coalesced blocked layout and
//    converted them to the mma.sync operand layouts through shared memory
//    every K step (two round trips, four barriers). Now a family of tiles
//    used only as a dot's operand a (or b) is *anchored* to that operand's
//    layout (ir/layout_plan.cpp): the masked loads write the fragment
//    registers directly and the dot packs them, no shared memory at all.
//  * The index vectors: `rk = k0 + arange<BLOCK_K>()` is dim 1 of the A tile
//    and dim 0 of the B tile, `rm` indexes A and C, `rn` B and C — with
//    anchored operands, three different layouts each. Rung 1 converted the
//    second use through shared memory (every step for rk). The
//    rematerialisation pass (ir/remat.cpp) clones such cheap chains into each
//    layout instead: an arange costs nothing in any layout.
//  * The accumulator's warp grid minimises the operand registers: A is held
//    by every warp of a warp row, B by every warp of a column, so 128x128
//    over 8 warps is 4x2 (a 32x64 tile per warp: 16 A + 32 B fragment
//    registers per 32-deep step next to 64 accumulators) rather than 8x1.
//  * bf16 operands are packed into mma fragments by a bit splice, not a cvt.
//
// Configurations: 128x128x32 with 8 warps (no spills, see test_gemm.cpp for
// the ptxas numbers); narrow N: 128x96x32 with 8 warps, or 64x96x32 with 4
// warps for twice the programs when M is small. With 4 warps, 128x128 needs
// more than 255 registers per thread and spills.
//
// What this rung leaves on the table (the next rungs, docs/gemm.md): loads
// go straight from global memory to registers, 2 bytes at a time, in the
// fragment order, which is poorly coalesced along B's rows and duplicated
// across the warps that share an operand — no staging through shared memory
// with ldmatrix; nothing overlaps the loads of step k+1 with the math of step
// k (no cp.async pipelining); and on sm_90a it still issues mma.sync rather
// than wgmma with operands in shared memory fed by TMA.
#pragma once
#include "examples/gemm/matmul_v1.hpp"

namespace examples {

/// Rung 2 is rung 1's kernel text compiled by today's compiler (see above).
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, class T>
using MatmulV2 = MatmulV1<BLOCK_M, BLOCK_N, BLOCK_K, T>;

}  // namespace examples
