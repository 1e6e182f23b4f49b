#!/bin/bash
# v0.30 call 3: the library at D = 64 (192-row items) beside the kernel rows it chose between, two rounds in one
# call; racecheck and memcheck on the small persistent cases (192-row items included); the other attention GPU cases.
# Usage: scripts/device_v30c.sh [.carry]
source scripts/device_common.sh
F='BM_AttnForward/D64/|BM_FlashFwdPersistentEvenN/D64/full/(128x128|192x128)/2|BM_FlashFwdPersistent/D64/causal/(128x128/2|192x96/2)'
bench_rows r1 "$B/attention_bench" "$F"
bench_rows r2 "$B/attention_bench" "$F"
echo "== racecheck"; sanitize racecheck 'attention_persistent_gpu_small_for_the_sanitizers' 150
echo "== memcheck"; sanitize memcheck 'attention_persistent_gpu_small_for_the_sanitizers' 100
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='attention*gpu*' \
  -tce='attention_library_forward_gpu_matches_f64,attention_persistent_gpu_matches_f64,attention_library_persistent_forward_gpu_matches_f64' \
  -d > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20; grep -E "^[0-9.]+ s:" "$OUT/tests.txt" | sort -rn | head -5
