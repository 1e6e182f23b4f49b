#!/bin/bash
# v0.32 call 1: tj::reshape / join / split / interleave on the H200 — their GPU cases, the int4 dequant example,
# compute-sanitizer racecheck and memcheck on both (the shared-memory fallback's barriers), the DSL's other GPU
# cases (nothing else should have moved), then BM_ReshapeCopy (plain, relabel in registers, fallback through
# shared memory) and BM_DequantInt4 beside BM_Copy.
# Usage: scripts/device_v32a.sh [.carry]
source scripts/device_common.sh
gpu_tests 'reshape_join_split_gpu_match_cpu,dequant_int4_gpu_matches_cpu'
cp "$OUT/tests.txt" "$OUT/tests_reshape.txt"
echo "== racecheck"; sanitize racecheck 'reshape_join_split_gpu_match_cpu,dequant_int4_gpu_matches_cpu' 170
echo "== memcheck"; sanitize memcheck 'reshape_join_split_gpu_match_cpu,dequant_int4_gpu_matches_cpu' 150
echo "== the DSL's other GPU cases"
gpu_tests 'argmax_gpu_matches_cpu,associative_scan_gpu_matches_cpu,atomics_gpu_match_cpu,f64_math_gpu_matches_std,math_more_gpu_matches_std,npot_warps_gpu_blocked_kernels_match_the_cpu,packed_carry_gpu_matches_reference,reduce_dtypes_gpu_matches_cpu,reduction_slices_gpu_matches_cpu,rescale_gpu_matches_multiply,scans_gpu_match_cpu,small_dots_gpu_matches_cpu,store_packing_gpu_16_bit_integers_and_integer_casts,tuple_scan_gpu_matches_cpu,gpu_vector_add_f32_f16_bf16,gpu_softmax_every_width,gpu_all_ops_match_the_interpreter,gpu_loops_match_the_interpreter,gpu_maximum_minimum_propagate_nan'
ROW_LIMIT=100 bench_rows reshape "$B/rowwise_bench" 'BM_Copy|BM_ReshapeCopy|BM_DequantInt4'
