#!/bin/bash
# v0.14 call 6: the library forward off Hopper's wgmma path (set_mma_sync_path) — GPU tests and TFLOP/s beside
# torch's flash backend; the pointer kernel for reference.
source scripts/device_common.sh
gpu_tests '*attention_library_forward*gpu*,*cp_async*'
bench_rows lib "$B/attention_bench" 'BM_AttnForwardMmaSync|BM_FlashFwdSm80/D128/full/pointer'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
