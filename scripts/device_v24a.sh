#!/bin/bash
# v0.24 call 1: the 2-stage GEMM rings' GPU cases (written last session without a device), the backward with its
# resident blocks in shared memory off Hopper (GPU tests, racecheck, bench beside the register-resident rows),
# and D = 256 with 80-key blocks on Hopper beside the library's 64-key ones; torch SDPA in the same call.
source scripts/device_common.sh
gpu_tests 'gemm_cp_async_gpu*,attention_backward_library*gpu*'
echo "== racecheck"; sanitize racecheck 'attention_backward_library_off_hopper_gpu*' 120
ROW_LIMIT=240 bench_rows bwd "$B/attention_bench" 'BM_FlashBwdSm80/.*/(ring|resident)/'
ROW_LIMIT=150 bench_rows d256 "$B/attention_bench" '(BM_AttnForward|BM_FlashFwd[A-Za-z]*)/D256/'
timeout -k 5 200 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt" | head -40
echo "== racecheck gemm"; sanitize racecheck 'gemm_cp_async_gpu*' 150
