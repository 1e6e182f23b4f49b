#!/usr/bin/env bash
# v0.12, second call: the D = 256 forward on the Hopper path (64-key blocks), GPU tests and rows beside torch SDPA.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,attention_persistent_gpu_matches*'
bench_rows d256 "$B/attention_bench" 'BM_AttnForward(per_item|persistent)?/D256'
echo "== torch SDPA, same call"
timeout -k 5 200 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; grep -E " 256 |  D " "$OUT/torch.txt" | head -6
bench_rows d256b "$B/attention_bench" 'BM_AttnForward(per_item|persistent)?/D256'
