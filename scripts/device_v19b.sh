#!/bin/bash
# v0.19 call 2: after the header changes (exact full / scalar, f64 math overloads, dot shape checks, descriptor
# small dots): the new cases, then every GPU test from case FIRST ($2, default 1) — a cold kernel cache may need two
# calls.
source scripts/device_common.sh
echo "== new cases"
timeout -k 5 120 "$B/tilejit_tests" -tc="small_dots_gpu*,f64_math_gpu*,reduction_slices_gpu*" > "$OUT/new.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/new.txt" | head -20
echo "== memcheck / racecheck, descriptor small dots"
timeout -k 5 100 compute-sanitizer --tool racecheck "$B/tilejit_tests" -tc="small_dots_gpu*" > "$OUT/racecheck.txt" 2>&1; tail -1 "$OUT/racecheck.txt"
echo "== every GPU test from case ${2:-1}"
timeout -k 5 380 "$B/tilejit_tests" -tc="*gpu*" --first="${2:-1}" -d > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30
echo "cases finished: $(grep -c " s: " "$OUT/tests.txt")"; grep " s: " "$OUT/tests.txt" | tail -2
