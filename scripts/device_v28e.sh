#!/bin/bash
# v0.28 call 5: the GPU suite at the final code (every *gpu* case but the profiler's), then the library forward,
# 406473f against this commit, one round around torch.
source scripts/device_common.sh
timeout -k 5 420 "$B/tilejit_tests" -tc='*gpu*' -tce='*profiler*,*cupti*' -d > "$OUT/tests.txt" 2>&1; echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30; tail -3 "$OUT/tests.txt"
R='BM_AttnForward/D'
ROW_LIMIT=90 bench_rows old1 "$B/attention_bench_old" "$R"
ROW_LIMIT=90 bench_rows fin1 "$B/attention_bench" "$R"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; grep -E "cudnn" "$OUT/torch.txt" | head -8
