#!/bin/bash
# v0.26 call 2: wgmma dots of 64 rows over two (four) warp groups, split along N (layout_plan's wgmma_groups_along_n):
# GPU tests of the split GEMMs, the fused backward at D = 128 (now m64n64 per group, K read in place) and the shared
# workspace; racecheck on the split; then the fused backward's rows beside two-pass at D = 128.
source scripts/device_common.sh
gpu_tests 'sm90_edge_warp_groups_split_n_gpu*,attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_library_decode_and_fused*'
echo "== racecheck"
sanitize racecheck 'sm90_edge_warp_groups_split_n_gpu*' 90
ROW_LIMIT=240 bench_rows fused "$B/attention_bench" 'BM_FlashBwdFused/D128|BM_FlashBwdTma/D128|BM_AttnBackward(TwoPass|Fused)/D128'
