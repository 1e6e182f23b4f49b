#!/bin/bash
# v0.19 call 1: small dots with warp copies (accumulators smaller than the program, mma.sync), reductions of
# different families meeting (one converted), and the neighbours they could disturb: reductions of every dtype,
# GEMM rungs 1-2 (mma.sync over all warps), the off-Hopper attention path. Then racecheck and memcheck on the new
# cases (copies must not race: only the owner of each element writes shared memory or global memory).
source scripts/device_common.sh
gpu_tests "small_dots_gpu*,reduction_slices_gpu*,reduce_dtypes_gpu*,gemm_v1_gpu*,gemm_v2*gpu*,attention_library_forward_off_hopper_gpu*"
grep -c "TEST CASE" "$OUT/tests.txt"
echo "== racecheck"; sanitize racecheck "small_dots_gpu*,reduction_slices_gpu*" 150
echo "== memcheck"; sanitize memcheck "small_dots_gpu*,reduction_slices_gpu*" 150
