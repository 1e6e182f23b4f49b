#!/usr/bin/env bash
# v0.7, fifth call: the small-M / narrow-N paths (scripts/device_smallm.sh), then every library candidate against
# f64 (rung 7 persistent now in the race) and the library on the large shapes beside cuBLAS TN.
# Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
bash "$(dirname "$0")/device_smallm.sh" "$@"
echo "== every library candidate vs f64"
timeout -k 5 150 "$B/tilejit_tests" -tc='gemm_tuned_gpu*' > "$OUT/tests_tuned.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests_tuned.txt" | head -10
echo "== library, large shapes"
timeout -k 5 250 "$B/gemm_bench" --benchmark_filter='BM_(TilejitGemm|CublasTN)/large' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
