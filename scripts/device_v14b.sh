#!/bin/bash
# v0.14 call 2: the cp.async ring (mma.sync compiled for sm_90) — GPU tests, sanitizers on the small case, and
# gemm_bench's sm_90 rows against cuBLAS TN in the same run.
source scripts/device_common.sh
gpu_tests '*cp_async*,gemm_v5_gpu_matches_f64,gemm_v5_gpu_small*'
echo "== racecheck / memcheck (small cases)"
sanitize racecheck 'gemm_v5_gpu_small*'
sanitize memcheck 'gemm_v5_gpu_small*'
bench_rows mmasync "$B/gemm_bench" 'BM_CublasTN<>/(4096/4096/4096|8192/8192/8192)|BM_TilejitMmaSync.*/(4096/4096/4096|8192/8192/8192)|BM_TilejitV2/128x128/4096'
