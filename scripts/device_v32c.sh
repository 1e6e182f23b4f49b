#!/bin/bash
# v0.32 call 3: the final reshape code (chains folded, unused reshapes not emitted) — its GPU cases and
# compute-sanitizer racecheck.
# Usage: scripts/device_v32c.sh [.carry]
source scripts/device_common.sh
echo "== reshape / join / split / dequant GPU cases"
timeout -k 5 200 "$B/reshape_tests" -tc='*gpu*' -d > "$OUT/tests_reshape.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests_reshape.txt" | head -20
echo "== racecheck"
timeout -k 5 200 compute-sanitizer --tool racecheck "$B/reshape_tests" -tc='*gpu*' > "$OUT/racecheck.txt" 2>&1; echo "rc $?"
tail -2 "$OUT/racecheck.txt"
