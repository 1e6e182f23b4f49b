#!/bin/bash
# v0.29 call 2: the backward masking only its edge blocks (MaskWhen) against call 1's binary (descriptors only), two
# rounds of the library backward and forward; then the GPU suite (every *gpu* case but the profiler's) for the rest of
# the call; doctest's --first ($3) resumes it in the next call.
source scripts/device_common.sh
R='BM_AttnBackward/D|BM_AttnForward/D(64|128)/'
ROW_LIMIT=70 bench_rows old1 "$B/attention_bench_old" "$R"
ROW_LIMIT=70 bench_rows new1 "$B/attention_bench" "$R"
ROW_LIMIT=70 bench_rows old2 "$B/attention_bench_old" "$R"
ROW_LIMIT=70 bench_rows new2 "$B/attention_bench" "$R"
timeout -k 5 ${2:-300} "$B/tilejit_tests" -tc='*gpu*' -tce='*profiler*,*cupti*' --first=${3:-1} -d > "$OUT/tests.txt" 2>&1
echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30; grep -c " s: " "$OUT/tests.txt"; tail -3 "$OUT/tests.txt"
