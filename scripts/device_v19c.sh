#!/bin/bash
# v0.19 call 4: after the review of the new DSL work (small dots at 12 / 20 / 24 warps — copies over a radix-3 or
# radix-5 warp digit —, 8- and 16-bit integer reductions without the f32 max, f64 max / min as specialisations):
# the changed GPU cases, racecheck on small dots, then the attention and GEMM GPU cases that share the prelude.
source scripts/device_common.sh
gpu_tests "small_dots_gpu*,reduce_dtypes_gpu*,f64_math_gpu*,reduction_slices_gpu*,gpu_maximum*,softmax*gpu*,gemm_v5*gpu*,attention_tma_gpu*"
echo "cases: $(grep -c " s: " "$OUT/tests.txt")"
echo "== racecheck small dots"; sanitize racecheck "small_dots_gpu*" 200
