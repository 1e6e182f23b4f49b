#!/bin/bash
# v0.27 call 1: vector reductions for f32 atomic adds (red.global.add.v2/v4.f32 on sm_90) and dQ's accumulator in
# pairs — the GPU cases (atomics, fused backward, library backward), then the backward rows, old binary (v0.26's
# 870f038: scalar atomics) against new, alternated in two rounds.
source scripts/device_common.sh
gpu_tests 'atomics*,axis_info*,attention_bwd_fused*,attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_backward_library_off_hopper_gpu*,attention_library_decode_and_fused*'
R='BM_AttnBackward(TwoPass|Fused)/D(64|128)/(full|causal)/'
bench_rows old1 "$B/attention_bench_old" "$R"
bench_rows new1 "$B/attention_bench" "$R"
bench_rows old2 "$B/attention_bench_old" "$R"
bench_rows new2 "$B/attention_bench" "$R"
echo "== racecheck / memcheck, fused backward and the vector adds"
sanitize memcheck 'attention_bwd_tma_gpu*,atomics_dot*' 150
