#!/bin/bash
# v0.21 call 9 (final): the cp.async ring's edge path with rolled loops and byte stores (no spill in any GEMM
# config), the library's off-Hopper causal tiles at 64 x 64: GPU tests of the ring's users, then the bench rows.
source scripts/device_common.sh
gpu_tests "gemm_cp_async_gpu*,gemm_v5_gpu*,attention_library_forward_off_hopper_gpu*,attention_tma_cp_async_gpu*,small_dots_gpu*"
grep " s: " "$OUT/tests.txt"
bench_rows gemm "$B/gemm_bench" 'BM_(CublasTN<>|TilejitMmaSync/(128x256/3|128x128/3|128x128/3/4w))/(4096/4096/4096|8192/8192/8192)'
bench_rows attn "$B/attention_bench" 'BM_AttnForwardMmaSync/D(64|96|128)'
