#!/bin/bash
# v0.23 call 5: the backward off Hopper (compiled for sm_90: what an A100 runs) — the pointer kernels the library
# runs there against flash_bwd_tma.hpp's kernels with cp.async rings; torch's backward in the same call.
source scripts/device_common.sh
ROW_LIMIT=240 bench_rows bwd "$B/attention_bench" 'BM_FlashBwdSm80/'
timeout -k 5 200 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; sed -n '/backward/,$p' "$OUT/torch.txt" | head -14
