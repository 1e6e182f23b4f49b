#!/bin/bash
# v0.32 call 1: tj::reshape / join / split / interleave on the H200 — their GPU cases, the int4 dequant example,
# compute-sanitizer racecheck and memcheck on both (the shared-memory fallback's barriers), the DSL's other GPU
# cases (nothing else should have moved), then BM_ReshapeCopy (plain, relabel in registers, fallback through
# shared memory) and BM_DequantInt4 beside BM_Copy.
# The reshape cases come from reshape_tests (test/codegen/test_reshape.cpp and test/examples/test_dequant_int4.cpp
# linked alone against this commit's library, -O2), the others from tilejit_tests.
# Usage: scripts/device_v32a.sh [.carry]
source scripts/device_common.sh
echo "== reshape / join / split / dequant GPU cases"
timeout -k 5 200 "$B/reshape_tests" -tc='*gpu*' -d > "$OUT/tests_reshape.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests_reshape.txt" | head -20
for tool in racecheck memcheck; do
  echo "== $tool"
  timeout -k 5 160 compute-sanitizer --tool $tool "$B/reshape_tests" -tc='*gpu*' > "$OUT/$tool.txt" 2>&1; echo "rc $?"
  tail -2 "$OUT/$tool.txt"
done
echo "== the DSL's other GPU cases"
gpu_tests 'argmax_gpu_matches_cpu,associative_scan_gpu_matches_cpu,atomics_gpu_match_cpu,f64_math_gpu_matches_std,math_more_gpu_matches_std,npot_warps_gpu_blocked_kernels_match_the_cpu,packed_carry_gpu_matches_reference,reduce_dtypes_gpu_matches_cpu,reduction_slices_gpu_matches_cpu,rescale_gpu_matches_multiply,scans_gpu_match_cpu,small_dots_gpu_matches_cpu,store_packing_gpu_16_bit_integers_and_integer_casts,tuple_scan_gpu_matches_cpu,gpu_vector_add_f32_f16_bf16,gpu_softmax_every_width,gpu_all_ops_match_the_interpreter,gpu_loops_match_the_interpreter,gpu_maximum_minimum_propagate_nan'
ROW_LIMIT=100 bench_rows reshape "$B/rowwise_bench" 'BM_Copy|BM_ReshapeCopy|BM_DequantInt4'
