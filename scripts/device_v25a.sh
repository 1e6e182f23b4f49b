#!/bin/bash
# v0.25 call 1: the GPU cases of the fused backward (dQ by atomics) and the code last session left unrun on a GPU
# (bf16 pairs stored by bit operations, converted pointer tiles), then the backward schedules side by side with
# torch's backward in the same call.
source scripts/device_common.sh
gpu_tests 'attention_backward_library*gpu*,attention_bwd_tma_gpu*,*decode*gpu*,small_dots_gpu*,*paired*gpu*'
ROW_LIMIT=150 bench_rows fused "$B/attention_bench" 'BM_FlashBwdFused'
ROW_LIMIT=200 bench_rows sched "$B/attention_bench" 'BM_AttnBackward(TwoPass|Fused|Sm80TwoPass|Sm80Fused)/'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt"
