#!/usr/bin/env bash
# GEMM closing run on the lent GPU: every non-profiler GPU test, then
# gemm_bench's tf32 / i8 rows and the small-M rows (library call with split-K)
# beside cuBLAS. SANITIZE=1 adds compute-sanitizer memcheck and racecheck on
# gemm_v5_gpu_small* (the earlier check run did that with rung 5's tests only).
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== GPU tests (all but the profiler's)"
"$B/tilejit_tests" -tce='profiler*,*plugin*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|FAILED|test cases|assertions|16 GEMM|stored GEMM" "$OUT/tests.txt" | cut -c1-300 | head -30
if [ "${SANITIZE:-0}" = 1 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timeout 120 "$CS" --tool memcheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' 2>&1 | tail -2
  timeout 120 "$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' 2>&1 | tail -2
fi
echo "== gemm_bench tf32 / i8 / small M"
timeout 300 "$B/gemm_bench" --benchmark_filter='TF32|I8|small' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed -E 's/ +[0-9.]+ ms +[0-9]+ / /'
