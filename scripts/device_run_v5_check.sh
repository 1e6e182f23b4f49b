#!/usr/bin/env bash
# Short GPU call for GEMM rung 5: its GPU tests (incl. 16-config tuning and
# reuse by a second process, split-K), compute-sanitizer memcheck/racecheck on
# the small rung-5 case, and the small-M rows of gemm_bench beside cuBLAS.
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== rung 5 GPU tests"
"$B/tilejit_tests" -tc='gemm_v5*,desc*,fp8*,gemm_tuned*,gemm_split*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|FAILED|test cases|assertions|16 GEMM|stored GEMM" "$OUT/tests.txt" | cut -c1-300 | head -30
echo "== compute-sanitizer (gemm_v5_gpu_small_for_the_sanitizers)"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 "$CS" --tool memcheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' 2>&1 | tail -2
timeout 120 "$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' 2>&1 | tail -2
echo "== gemm_bench small M"
timeout 200 "$B/gemm_bench" --benchmark_filter='small' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed -E 's/ +[0-9.]+ ms +[0-9]+ / /'
