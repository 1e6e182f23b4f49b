#!/bin/bash
# v0.25 call 2: why the fused backward is slower off Hopper. TJX_DQ was a temporary switch in flash_bwd_tma.hpp
# (removed before the commit): "perm" — dQ's atomics at addresses permuted to the accumulator fragment (each warp's
# RED covers 128 contiguous bytes, FlashAttention-2's dQaccum trick; timing only, its rounding pass not adapted);
# "store" — plain stores instead of atomics (wrong results, timing only). Beside them the two-pass rows' launch split.
source scripts/device_common.sh
R='BM_FlashBwdFusedSm80/.*/kv64x128'
for m in atomic perm store; do TJX_DQ=$m ROW_LIMIT=80 bench_rows $m "$B/attention_bench" "$R"; done
ROW_LIMIT=100 bench_rows twopass "$B/attention_bench" 'BM_FlashBwdSm80/D(64|128)/full/resident/kv64x64/q64x64'
