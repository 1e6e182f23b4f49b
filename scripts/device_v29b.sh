#!/bin/bash
# v0.29 calls 2-3: the GPU suite at the new wgmma descriptors (every *gpu* case but the profiler's, whose kernels
# are not what changed); doctest's --first ($3) resumes it in the next call.
source scripts/device_common.sh
timeout -k 5 ${2:-540} "$B/tilejit_tests" -tc='*gpu*' -tce='*profiler*,*cupti*' --first=${3:-1} -d > "$OUT/tests.txt" 2>&1
echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30; grep -c " s: " "$OUT/tests.txt"; tail -3 "$OUT/tests.txt"
