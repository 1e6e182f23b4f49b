#!/bin/bash
# v0.26 call 5: the final code — the fused D = 64 rows with the block's start given as rows again, and the GPU cases of
# the split (one dot of its extent only) and of the fused backward.
source scripts/device_common.sh
R='BM_AttnBackward(TwoPass|Fused)?/D64/full'
bench_rows r1 "$B/attention_bench" "$R"
gpu_tests 'sm90_edge_warp_groups_split_n_gpu*,sm90_edge_narrow_slabs_gpu*,attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_library_decode_and_fused*'
bench_rows r2 "$B/attention_bench" "$R"
