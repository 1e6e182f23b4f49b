#!/bin/bash
# v0.14 call 3: the cp.async refill moved to the top of the iteration (right after its barrier) against the commit
# before (gemm_bench_old: refill at the end), alternated; the new GPU tests.
source scripts/device_common.sh
gpu_tests '*cp_async*,gemm_v5_gpu_matches_f64,gemm_v5_gpu_small*'
F='BM_TilejitMmaSync/(128x128/3|128x256/3)/(4096/4096/4096|8192/8192/8192)'
bench_rows old1 "$B/gemm_bench_old" "$F"
bench_rows new1 "$B/gemm_bench" "$F|BM_TilejitMmaSync/(128x256/4|256x128/3)/(4096/4096/4096|8192/8192/8192)|BM_CublasTN<>/(4096/4096/4096|8192/8192/8192)"
bench_rows old2 "$B/gemm_bench_old" "$F"
bench_rows new2 "$B/gemm_bench" "$F"
