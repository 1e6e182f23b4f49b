#!/bin/bash
# v0.15 call 5: the batched GEMM library call (GPU cases on both plans, then its rows beside cuBLAS, f32 and bf16 C),
# and the GPU cases that changed since call 1 (rank-N descriptors, the attention forward and backward libraries).
source scripts/device_common.sh
gpu_tests 'gemm_batched*gpu*,desc_rank*gpu*,attention_library*gpu*,attention_backward*gpu*,attention_bwd*gpu*,gemm_v7*gpu*'
bench_rows batched "$B/gemm_bench" 'BM_(CublasBatched|TilejitGemmBatched)'
