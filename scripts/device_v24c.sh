#!/bin/bash
# (TJX_NOPAIR / TJX_OLDPITCH / TJX_NOPACK were temporary switches in src/codegen/codegen.cpp for this measurement,
# removed before the commit: today both halves of each A/B run the final code.)
# v0.24 call 3: the packed conversions read with ldmatrix.x4 (mma.sync A fragments) from 144-byte rows, against the
# element-by-element conversion (TJX_NOPAIR=1, as at call 1), off-Hopper backward rows; then the whole GPU suite
# (toy plugin carried) for as long as the call allows.
source scripts/device_common.sh
R='BM_FlashBwdSm80/.*/resident/kv64x64/q64x64'
TJX_NOPAIR=1 ROW_LIMIT=100 bench_rows old "$B/attention_bench" "$R"
ROW_LIMIT=100 bench_rows new "$B/attention_bench" "$R"
timeout -k 5 ${2:-400} "$B/tilejit_tests" -tc='*gpu*' --first=${3:-1} -d > "$OUT/tests.txt" 2>&1; echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -30; grep -c " s: " "$OUT/tests.txt"; tail -3 "$OUT/tests.txt"
