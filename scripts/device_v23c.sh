#!/bin/bash
# v0.23 call 3: the off-Hopper tiles again with 2-stage rings refilled at the top (full: edge blocks masked; causal:
# every block, and edge-masked), two rounds, torch SDPA between them.
source scripts/device_common.sh
R='BM_FlashFwdSm80/.*/2st'
ROW_LIMIT=240 bench_rows r1 "$B/attention_bench" "$R"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows r2 "$B/attention_bench" "$R"
