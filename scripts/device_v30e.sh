#!/bin/bash
# v0.30 call 5: the library's D = 64 full forward with K and V through the rank-2 view (192-row items, S a multiple of
# 128): GPU tests of the library forward, then the library beside torch SDPA in one call.
# Usage: scripts/device_v30e.sh [.carry]
source scripts/device_common.sh
gpu_tests 'attention_library_forward_gpu_matches_f64'
F='BM_AttnForward/D(64|96|128|256)/|BM_FlashFwdPersistentEvenN/D64/full/192x128/2'
bench_rows r1 "$B/attention_bench" "$F"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -17 "$OUT/torch.txt"
bench_rows r2 "$B/attention_bench" "$F"
