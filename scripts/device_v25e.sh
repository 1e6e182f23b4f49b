#!/bin/bash
# v0.25 call 5: the whole GPU suite at the final code (fused_by_default: fused for full D = 64 and, off Hopper,
# causal D = 128), toy plugin carried; then the library backward rows.
source scripts/device_common.sh
timeout -k 5 ${2:-470} "$B/tilejit_tests" -tc='*gpu*' --first=${3:-1} -d > "$OUT/tests.txt" 2>&1; echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -30; grep -c " s: " "$OUT/tests.txt"; tail -3 "$OUT/tests.txt"
ROW_LIMIT=60 bench_rows lib "$B/attention_bench" 'BM_AttnBackward/'
