#!/bin/bash
# v0.23 call 2: 2-stage cp.async rings refilled at the top of the iteration (codegen top_refill); the library off
# Hopper at off_hopper_stages (3 where they fit); the edge-masked full kernel at 3 stages over tiles. GPU tests of
# every cp.async ring user first; racecheck on the off-Hopper forward last.
source scripts/device_common.sh
gpu_tests 'attention_library_forward_off_hopper*,attention_tma_cp_async_gpu*,gemm_cp_async_gpu*,gemm_v5_gpu*,gemm_batched_gpu*,small_dots_gpu*'
R='BM_(AttnForwardMmaSync/|FlashFwdSm80/D(64|96|128)/(full|causal)/cp\.async)'
ROW_LIMIT=240 bench_rows r1 "$B/attention_bench" "$R"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows r2 "$B/attention_bench" "$R"
echo "== racecheck"; sanitize racecheck 'attention_library_forward_off_hopper_gpu*' 120
