#!/bin/bash
# v0.34 call 1: tj::exp2_split in the attention forward's softmax (one probability register in 4 on the FMA pipe)
# against the same commit built with every exp2 on the SFU (attention_bench_old: -DTILEJIT_ATTN_EXP2_SPLIT=0),
# alternated in two rounds with torch SDPA between them; D = 96 exact against the same kernel padded to 128.
# GPU tests first: exp2_split's own cases and the library forward's against f64 (a test binary of just those TUs).
# Usage: scripts/device_v34a.sh [.carry]
source scripts/device_common.sh
ldd "$B/attention_bench" | grep -i "not found"
gpu_tests 'exp2_split*,attention_library_forward_gpu_matches_f64,attention_library_persistent_forward_gpu_matches_f64'
F='BM_AttnForward/D(64|96|128|256)/|BM_FlashFwdPingPongEdge(Padded)?/D96/(full|causal)/128x128/2'
ab_rounds "$F" "$F"
