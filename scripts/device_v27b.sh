#!/bin/bash
# v0.27 call 4: Desc::atomic_add — dQ's share added by TMA bulk reduce-adds (FlashBwdFusedTmaAdd, the library's
# Hopper fused schedule). GPU cases, sanitizers, then the library backward rows: v0.27's first commit (cad8298:
# vector reductions) against this one, alternated in two rounds.
source scripts/device_common.sh
gpu_tests 'desc_atomic_add*,atomics*,attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_library_decode_and_fused*,attention_bwd_fused*'
R='BM_AttnBackward(TwoPass|Fused)/D(64|96|128)/(full|causal)/'
bench_rows v2a "$B/attention_bench_v2" "$R"
bench_rows tma_a "$B/attention_bench" "$R"
bench_rows v2b "$B/attention_bench_v2" "$R"
bench_rows tma_b "$B/attention_bench" "$R"
echo "== memcheck / racecheck: the TMA reduce-adds"
sanitize memcheck 'desc_atomic_add_gpu*' 120
sanitize racecheck 'desc_atomic_add_gpu*' 120
