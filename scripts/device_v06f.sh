#!/usr/bin/env bash
# v0.6: the library backward with producer warp groups above D = 64 (FlashBwdTmaConfig::kv_ws / q_ws): its GPU
# test (D 64 / 96 / 128, GQA, ragged S) and BM_AttnBackward. Carry tilejit_tests and attention_bench.
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/$B
timeout -k 5 100 "$B/tilejit_tests" -tc='attention_backward_library_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
timeout -k 5 80 "$B/attention_bench" --benchmark_filter='BM_AttnBackward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
