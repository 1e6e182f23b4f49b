#!/bin/bash
# v0.15 call 1: rank-3..5 kernel descriptors (desc_view) and the attention forward's rank-3 K / V — the new GPU
# cases, then every GPU test (the TMA / cp.async code paths all moved), then the batched GEMM rows beside
# cublasGemmStridedBatchedEx.
source scripts/device_common.sh
gpu_tests 'desc_rank*gpu*,attention_library*gpu*'
cp "$OUT/tests.txt" "$OUT/tests_new.txt"
gpu_tests '*gpu*'
bench_rows batched "$B/gemm_bench" 'Batched'
