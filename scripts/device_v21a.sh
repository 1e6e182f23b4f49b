#!/bin/bash
# v0.21 call 1: the GPU cases written while no device was lent (scans, atomics, more math, argmax, compaction,
# 12/24-warp column sums), compute-sanitizer racecheck and memcheck on the scan, atomic and compaction cases, then
# every GPU test from case FIRST ($2, default 1).
source scripts/device_common.sh
NEW="scans_gpu*,atomics_gpu*,math_more_gpu*,argmax_gpu*,compact_gpu*,npot_warps_gpu*"
echo "== new cases"
timeout -k 5 150 "$B/tilejit_tests" -tc="$NEW" -d > "$OUT/new.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping| s: " "$OUT/new.txt" | head -40
echo "== racecheck"; sanitize racecheck "scans_gpu*,atomics_gpu*,compact_gpu*" 150
echo "== memcheck"; sanitize memcheck "scans_gpu*,atomics_gpu*,compact_gpu*,argmax_gpu*" 150
echo "== every GPU test from case ${2:-1}"
timeout -k 5 200 "$B/tilejit_tests" -tc="*gpu*" --first="${2:-1}" -d > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30
echo "cases finished: $(grep -c " s: " "$OUT/tests.txt")"; grep " s: " "$OUT/tests.txt" | tail -2
