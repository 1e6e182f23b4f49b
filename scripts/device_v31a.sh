#!/bin/bash
# v0.31 call 1: FlashAttention-3's first key block peeled out of the key loop (fa3_keys, D <= 128: no P·V with
# P_{-1} = 0 per item and warp group). GPU tests of the forward kernels that use it, then the previous commit's
# library rows (attention_bench_old) and this one's alternated in two rounds, torch SDPA between them; the D = 256
# persistent schedule beside the per-item one (no longer measured since v0.12's spills).
# Usage: scripts/device_v31a.sh [.carry]
source scripts/device_common.sh
gpu_tests 'attention_library_forward_gpu_matches_f64,attention_persistent_gpu_matches_f64'
F='BM_AttnForward/D(64|96|128|256)/|BM_AttnForward(per_item|persistent)/D256/'
ab_rounds "$F" "$F"
