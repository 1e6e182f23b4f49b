#!/usr/bin/env bash
# One call on the lent GPU: all tests (GPU ones included), compute-sanitizer on
# the GEMM rungs, the demo, and both benchmark binaries. Results under $OUT.
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
rm -rf "$TILEJIT_CACHE_DIR"
echo "== tests"
"$B/tilejit_tests" 2>&1 | tee "$OUT/tests.txt" | grep -E "ERROR|test cases|assertions" | head -30
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
echo "== memcheck/racecheck: GEMM rungs"
"$CS" --tool memcheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v3_gpu*,gemm_v2_gpu*' 2>&1 | tail -2
"$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v3_gpu*' 2>&1 | tail -2
echo "== demo"; "$B/tilejit" demo 2>&1 | tee "$OUT/demo.txt" | tail -9
echo "== rowwise_bench"; "$B/rowwise_bench" --benchmark_min_time=0.3 2>&1 | tee "$OUT/rowwise.txt" | grep BM_
echo "== gemm_bench"; "$B/gemm_bench" --benchmark_min_time=0.2 2>&1 | tee "$OUT/gemm.txt" | grep BM_
