#!/bin/bash
# v0.31 call 4: the GPU suite at this session's final code (every *gpu* case but the profiler's), as far as the
# call's time allows; the count of cases run and passed is in the summary.
# Usage: scripts/device_v31d.sh [.carry]
source scripts/device_common.sh
echo "== GPU suite"
timeout -k 5 420 "$B/tilejit_tests" -tc='*gpu*' -tce='*profiler*,*cupti*' -d > "$OUT/suite.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/suite.txt" | head -20
grep -cE "^[0-9.]+ s:" "$OUT/suite.txt"; grep -E "^[0-9.]+ s:" "$OUT/suite.txt" | tail -3
