#!/bin/bash
# v0.22 call 3: D = 96 off Hopper (mma.sync, cp.async ring; what an A100 runs) — the tile sweep rows beside the
# library's choice, two rounds, torch SDPA's flash backend (FA2) between them.
source scripts/device_common.sh
R='BM_(AttnForwardMmaSync/D96|FlashFwdSm80/D96)/'
bench_rows r1 "$B/attention_bench" "$R"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; grep -E " 96 |TFLOP" "$OUT/torch.txt"
bench_rows r2 "$B/attention_bench" "$R"
