#!/bin/bash
# v0.29 call 1: wgmma descriptors built once per operand (each k step adds its offset to the low word) and the warp
# group index broadcast from lane 0, against 7af52c6's binaries: the library forward and backward, the D = 96
# exact / padded pair, torch SDPA, and the bf16 GEMM library call beside cuBLAS, old and new alternated.
source scripts/device_common.sh
R='BM_AttnForward/D|BM_AttnBackward/D|BM_FlashFwdPingPongEdge(Padded)?/D96/(full|causal)/128x128/2$'
ab_rounds "$R" "$R"
G='BM_TilejitGemmBf16Out/large|BM_CublasTNBf16Out/large'
ROW_LIMIT=150 bench_rows gold "$B/gemm_bench_old" "$G"
ROW_LIMIT=150 bench_rows gnew "$B/gemm_bench" "$G"
