#!/bin/bash
# v0.17 call 4: rung 5 with 128- and 256-wide K steps (each row of an A block 256 / 512 contiguous bytes, copied as
# two / four TMA boxes) at M = K = 8192, N = 96 and 192 — does DRAM stream A faster with longer runs? GPU tests of
# the new K steps first; the rows twice, alternated with cuBLAS (f32 C).
source scripts/device_common.sh
gpu_tests 'gemm_v5_gpu_matches_f64'
F='BM_CublasTN<>/8192/(96|192)/8192|BM_TilejitV5/64x(96|192)(x128|x256)?/[0-9]+/8192/(96|192)/'
bench_rows narrow1 "$B/gemm_bench" "$F"
bench_rows narrow2 "$B/gemm_bench" "$F"
