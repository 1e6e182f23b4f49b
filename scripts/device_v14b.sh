#!/bin/bash
# v0.14 call 2: the cp.async ring (mma.sync compiled for sm_90) — GPU tests, sanitizers on the small case, and
# gemm_bench's sm_90 rows against cuBLAS TN in the same run.
source scripts/device_common.sh
gpu_tests '*cp_async*,gemm_v5_gpu_matches_f64,gemm_v5_gpu_small*'
echo "== racecheck / memcheck (small cases)"
timeout -k 5 200 compute-sanitizer --tool racecheck "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' > "$OUT/racecheck.txt" 2>&1; echo "rc $?"
tail -3 "$OUT/racecheck.txt"
timeout -k 5 200 compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' > "$OUT/memcheck.txt" 2>&1; echo "rc $?"
tail -3 "$OUT/memcheck.txt"
bench_rows mmasync "$B/gemm_bench" 'BM_CublasTN<>/(4096/4096/4096|8192/8192/8192)|BM_TilejitMmaSync.*/(4096/4096/4096|8192/8192/8192)|BM_TilejitV2/128x128/4096'
