#!/bin/bash
# v0.26 call 1: the in-register fold of a reduction as 4 interleaved partial chains (temporary TJX_RED=4 switch in
# codegen) against the serial chain, on the Hopper forward; then sanitizers on the fused backward (v0.25 owed them).
source scripts/device_common.sh
echo "== forward GPU tests with TJX_RED=4"
TJX_RED=4 timeout -k 5 200 "$B/tilejit_tests" -tc='attention_library_forward_gpu*,attention_library_persistent_forward_gpu*' > "$OUT/tests_red4.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests_red4.txt" | head
R='BM_AttnForward/|BM_FlashFwdPadded/D96'
ROW_LIMIT=100 bench_rows base1 "$B/attention_bench" "$R"
TJX_RED=4 ROW_LIMIT=100 bench_rows red4a "$B/attention_bench" "$R"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -18 "$OUT/torch.txt"
ROW_LIMIT=100 bench_rows base2 "$B/attention_bench" "$R"
TJX_RED=4 ROW_LIMIT=100 bench_rows red4b "$B/attention_bench" "$R"
TJX_RED=8 ROW_LIMIT=100 bench_rows red8 "$B/attention_bench" "$R"
echo "== memcheck / racecheck, fused backward"
sanitize memcheck 'attention_bwd_tma_gpu*' 90
sanitize racecheck 'attention_bwd_tma_gpu*' 90
