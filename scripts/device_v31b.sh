#!/bin/bash
# v0.31 call 2: the peel kept at D = 96 and 128 only, D = 256 full persistent by default. GPU tests of the library
# forward (automatic and per item; persistent forced), then the previous session's library rows (attention_bench_old)
# and this commit's alternated in two rounds with torch SDPA between them; D = 96 exact against the same kernel padded.
# Usage: scripts/device_v31b.sh [.carry]
source scripts/device_common.sh
gpu_tests 'attention_library_forward_gpu_matches_f64,attention_library_persistent_forward_gpu_matches_f64'
F='BM_AttnForward/D(64|96|128|256)/|BM_FlashFwdPingPongEdge(Padded)?/D96/(full|causal)/128x128/2'
ab_rounds "$F" "$F"
