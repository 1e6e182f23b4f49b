#!/usr/bin/env bash
# One call on the lent GPU: the GPU tests, compute-sanitizer on the GEMM, and gemm_bench beside cuBLAS.
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
echo "== GPU tests"
"$B/tilejit_tests" -tc='gpu*,gemm*,*utotun*,*escriptor*,device*' 2>&1 | tee "$OUT/tests.txt" | grep -E "ERROR|FAILED|test cases|assertions|MESSAGE: (tuned|second|16)" | head -40
echo "== memcheck + racecheck on GEMM rung 1"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$CS" --tool memcheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v1_gpu*' 2>&1 | tail -3
"$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v1_gpu*' 2>&1 | tail -3
echo "== gemm_bench"
"$B/gemm_bench" --benchmark_min_time=0.3 --benchmark_out="$OUT/gemm_bench.json" --benchmark_out_format=json 2>&1 | tee "$OUT/gemm_bench.txt" | grep -E "BM_|WARN"
