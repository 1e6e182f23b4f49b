#!/bin/bash
# v0.23 call 4: the library off Hopper at its new tiles (edge-masked kernel everywhere, 4 warps, 2 stages refilled at
# the top): GPU tests of every cp.async ring user, the library rows in two rounds around torch SDPA, then
# racecheck and memcheck on the off-Hopper library forward.
source scripts/device_common.sh
gpu_tests 'attention_library_forward_off_hopper*,attention_tma_cp_async_gpu*,gemm_cp_async_gpu*,gemm_v5_gpu*,gemm_batched_gpu*,small_dots_gpu*'
R='BM_AttnForwardMmaSync/'
ROW_LIMIT=200 bench_rows r1 "$B/attention_bench" "$R"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows r2 "$B/attention_bench" "$R"
echo "== racecheck"; sanitize racecheck 'attention_library_forward_off_hopper_gpu*' 120
echo "== memcheck"; sanitize memcheck 'attention_library_forward_off_hopper_gpu*' 120
echo "== GEMM off Hopper: 2 stages refilled at the top, 3 at the end"
bench_rows gemm "$B/gemm_bench" 'BM_(CublasTN<>|TilejitMmaSync/(128x128|128x256)/[23])/(4096/4096/4096|8192/8192/8192)/'
