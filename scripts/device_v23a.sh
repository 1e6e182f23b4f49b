#!/bin/bash
# v0.23 call 1: deeper cp.async rings off Hopper (mma.sync, what an A100 runs). With 2 stages the refill of
# iteration i + 1 is issued at the end of iteration i and waited for at the start of i + 1; 3 or 4 stages leave a
# whole iteration between issue and wait. Library rows, then 2-, 3- and 4-stage kernel rows; torch SDPA between rounds.
source scripts/device_common.sh
R='BM_(AttnForwardMmaSync/|FlashFwdSm80/D(64|96|128)/(full|causal)/cp\.async)'
ROW_LIMIT=240 bench_rows r1 "$B/attention_bench" "$R"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows r2 "$B/attention_bench" "$R"
