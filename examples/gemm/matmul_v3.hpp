// examples/gemm/matmul_v3.hpp — rung 3 of the GEMM ladder: the same kernel
// source as rungs 1 and 2, compiled for sm_90a with BLOCK_K = 64 and one warp
// per 16 rows of BLOCK_M. The compiler then lowers `dot` to wgmma m64nNk16:
// A and B tiles are loaded with 16-byte vector loads (blocked layouts with 8
// bf16 per thread), staged in shared memory K-major with the 128-byte swizzle
// (B transposed on the way), and multiplied by one wgmma per 16-deep k step
// per warp group, N up to 256 and NPOT N exact (96, 192).
//
// What this rung leaves on the table: loads are synchronous (no TMA, no
// cp.async, no multi-stage pipeline), so memory latency is exposed every K
// step; one output tile per program (no persistent grid); no warp
// specialisation.
#pragma once
#include "examples/gemm/matmul_v1.hpp"

namespace examples {

template <int BLOCK_M, int BLOCK_N, class T>
using MatmulV3 = MatmulV1<BLOCK_M, BLOCK_N, 64, T>;

/// num_warps for MatmulV3: one warp per 16 rows (BLOCK_M / 64 warp groups).
template <int BLOCK_M>
inline constexpr int matmul_v3_warps = BLOCK_M / 16;

}  // namespace examples
