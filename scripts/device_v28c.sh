#!/bin/bash
# v0.28 call 3: which part of call 2's change costs D <= 128. Three attention_bench binaries alternated: before
# (406473f), everything of call 2 (tj::rescale at every head dim, the max threshold, overflow-safe loops), and the
# final choice (tj::rescale only from D = 256; the threshold and the loops kept) — so the loops and the threshold
# alone show in the D <= 128 rows.
source scripts/device_common.sh
R='BM_AttnForward/D'
bench_rows old1 "$B/attention_bench_old" "$R"
bench_rows all1 "$B/attention_bench_all" "$R"
bench_rows fin1 "$B/attention_bench" "$R"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; grep -E "cudnn|flash" "$OUT/torch.txt" | head -16
bench_rows old2 "$B/attention_bench_old" "$R"
bench_rows all2 "$B/attention_bench_all" "$R"
bench_rows fin2 "$B/attention_bench" "$R"
