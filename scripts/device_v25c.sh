#!/bin/bash
# v0.25 call 3: 32 x 128 dK/dV tiles (ptxas: no spills, where 64 x 128 spill 400-700 bytes) for the fused backward
# with permuted dQ atomics (TJX_DQ=perm, a temporary switch, see device_v25b.sh) and for the two-pass dK/dV kernel.
source scripts/device_common.sh
TJX_DQ=perm ROW_LIMIT=150 bench_rows perm "$B/attention_bench" 'BM_FlashBwdFusedSm80/.*/kv32x128'
ROW_LIMIT=150 bench_rows twopass "$B/attention_bench" 'BM_FlashBwdSm80/D(64|96|128)/full/resident/kv(32x128|64x64)/q64x64'
