#!/usr/bin/env bash
# One call on the lent GPU for GEMM rung 5: its GPU tests, then gemm_bench's
# rung-5 rows beside cuBLAS with the same operand layout (B stored [N, K]).
#   scripts/device_run_v5.sh [.carry] [extra gemm_bench filter]
set -u
B=${1:-.carry}
FILTER=${2:-'BM_CublasTN|BM_TilejitV5'}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== rung 5 GPU tests"
"$B/tilejit_tests" -tc='gemm_v5*,desc*' 2>&1 | tee "$OUT/tests.txt" | grep -E "ERROR|FAILED|test cases|assertions|CHECK|REQUIRE" | head -40
echo "== gemm_bench ($FILTER)"
"$B/gemm_bench" --benchmark_filter="$FILTER" --benchmark_min_time=0.2 --benchmark_out="$OUT/gemm_bench.json" \
  --benchmark_out_format=json 2>&1 | tee "$OUT/gemm_bench.txt" | grep -E "BM_|WARN|rror"
