#!/bin/bash
# v0.21 call 8: the attention forward off Hopper (mma.sync, cp.async ring) after the interior fast path: the
# library's tiles and FlashAttention-2's (128 query rows on 4 warps), with torch's SDPA (flash = FA2) in the call.
source scripts/device_common.sh
bench_rows sm80 "$B/attention_bench" 'BM_(AttnForwardMmaSync/D(64|96|128)|FlashFwdSm80/D(64|128)/.*/cp.async)'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -17 "$OUT/torch.txt"
