#!/bin/bash
# v0.21 call 7: the mma.sync GEMM with 128x128 tiles on 4 warps (64x64 per warp, two programs per SM) beside the
# 8-warp tiles, after the interior fast path; cuBLAS in the same pass.
source scripts/device_common.sh
G='BM_(CublasTN<>|TilejitMmaSync/(128x256/3|256x128/3|128x128/3|128x128/3/4w|128x128/4/4w|64x128/4))/(4096/4096/4096|8192/8192/8192|4096/6144/4096|16384/4096/4096)'
bench_rows g1 "$B/gemm_bench" "$G"
