#!/bin/bash
# v0.15 call 6: the Hopper varlen forward (FlashAttnFwdVarlenTma behind Attention::forward_varlen) — its GPU cases,
# then its rows beside the pointer kernel it replaces and the dense forward; and the rank-N / batched GPU cases after
# the launch check's overflow fix.
source scripts/device_common.sh
gpu_tests 'attention_more_gpu*,desc_rank*gpu*,gemm_batched*gpu*'
bench_rows varlen "$B/attention_bench" 'BM_AttnForward(Varlen|VarlenPointer)?/D(64|128)/'
