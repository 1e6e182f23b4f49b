#!/bin/bash
# v0.25 call 4: the fused backward with dQ's atomics in the accumulator fragment's order (dq_acc_offset), its tiles
# (64 x 128 at D = 64, 32 x 128 above, 8 warps): GPU tests of both schedules on both paths, then the rows.
source scripts/device_common.sh
gpu_tests 'attention_backward_library*gpu*,attention_bwd_tma_gpu*'
ROW_LIMIT=150 bench_rows fused "$B/attention_bench" 'BM_FlashBwdFusedSm80/D64/(full|causal)/kv64x128|BM_FlashBwdFusedSm80/D(96|128)/.*kv32x128'
ROW_LIMIT=200 bench_rows sched "$B/attention_bench" 'BM_AttnBackward(Sm80TwoPass|Sm80Fused|TwoPass|Fused)/|BM_AttnBackward/'
