#!/bin/bash
# v0.14 call 5: the whole-rows warp split on the sm_90 mma.sync forward (cp.async ring) against torch's flash backend
# (FlashAttention-2) and the pointer kernel, same call; GPU tests of the cp.async path.
source scripts/device_common.sh
gpu_tests '*cp_async*,gemm_v5_gpu_matches_f64'
bench_rows sm80 "$B/attention_bench" 'BM_FlashFwdSm80'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
