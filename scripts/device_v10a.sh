#!/usr/bin/env bash
# v0.10, first call: the persistent forward's schedule table (FwdItemTable: equal causal sections, greedy
# least-loaded assignment, read by the producer warp group too). GPU tests of the persistent forward, the library
# forward, the block-sparse producer loads and the review's pending e4m3 case; then the persistent rows of the
# previous commit (attention_bench_old: round robin) and of this one, alternated, with torch SDPA between.
# Carry tilejit_tests, attention_bench, attention_bench_old and their libraries.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*,producer_loads*gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,packed_zero_resident_edges_gpu*'
# (round 1 also ran BM_AttnForwardper_item/ of the old binary; round 2 only the persistent rows)
ab_rounds 'BM_FlashFwdPersistent/D(64|96|128)/' 'BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward(per_item)?/'
