#!/bin/bash
# v0.15 call 3: the rank-N descriptor GPU cases after the test's K fix, the batched rows with cuBLAS writing bf16 too
# and an f32 C by TMA, then compute-sanitizer racecheck and memcheck on the rank-N cases (TMA 3-D / 4-D boxes, the
# TMA store, the cp.async slices, the producer warp group).
source scripts/device_common.sh
gpu_tests 'desc_rank*gpu*'
bench_rows batched "$B/gemm_bench" 'BM_(Cublas|Tilejit)Batched(Bf16Out|Persistent)'
echo "== racecheck / memcheck (rank-N descriptors)"
sanitize racecheck 'desc_rank*gpu*' 200
sanitize memcheck 'desc_rank*gpu*' 200
