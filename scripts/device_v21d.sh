#!/bin/bash
# v0.21 call 5: GPU tests of everything the cp.async ring copies (mma.sync GEMM, batched GEMM, small dots, the
# off-Hopper attention forward), compute-sanitizer on the ring's GEMM cases, then the attention forward off Hopper
# with the interior fast path inline, alternated with the previous build.
source scripts/device_common.sh
gpu_tests "gemm_cp_async_gpu*,gemm_v5_gpu*,gemm_batched_gpu*,small_dots_gpu*,attention_library_forward_off_hopper_gpu*,attention_tma_cp_async_gpu*"
grep " s: " "$OUT/tests.txt"
echo "== racecheck"; sanitize racecheck "gemm_v5_gpu_small_for_the_sanitizers" 120
echo "== memcheck"; sanitize memcheck "gemm_cp_async_gpu*" 150
A='BM_AttnForwardMmaSync/D(64|96|128)/(full|causal)'
bench_rows aold "$B/attention_bench_old" "$A"; bench_rows anew "$B/attention_bench" "$A"
