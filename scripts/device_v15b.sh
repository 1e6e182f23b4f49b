#!/bin/bash
# v0.15 call 2: the persistent batched GEMM (GPU cases, then its rows beside cublasGemmStridedBatchedEx), and the
# library attention forward with rank-3 K / V (this commit) against the 2-D view (attention_bench_old: e5805c0),
# alternated, torch SDPA in between.
source scripts/device_common.sh
gpu_tests 'desc_rank*gpu*'
bench_rows batched "$B/gemm_bench" 'Batched'
ab_rounds 'BM_AttnForward/D(64|96|128)/' 'BM_AttnForward/D(64|96|128)/'
