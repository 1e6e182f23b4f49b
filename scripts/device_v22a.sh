#!/bin/bash
# v0.22 call 1: the first GPU run of tj::associative_scan / tj::reduce with a user's combine, then the whole GPU
# suite (toy plugin carried) for as long as the call allows; doctest's --first resumes it in the next call.
source scripts/device_common.sh
ls -la build-rel/examples/profiler_plugin/ 2>&1 | tail -1
timeout -k 5 120 "$B/tilejit_tests" -tc='associative_scan_gpu*' -d > "$OUT/scan.txt" 2>&1; echo "scan rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping| s: " "$OUT/scan.txt" | head
timeout -k 5 ${2:-430} "$B/tilejit_tests" -tc='*gpu*' --first=${3:-1} -d > "$OUT/tests.txt" 2>&1; echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -30; grep -c " s: " "$OUT/tests.txt"; tail -3 "$OUT/tests.txt"
