#!/bin/bash
# v0.15 call 4: the Hopper backward through rank-3 descriptors — its GPU cases (NaN in the next batch's first rows
# included), the backward rows against the 2-D view (attention_bench_old: e5805c0) alternated, then the batched f32
# C rows beside cuBLAS in one run.
source scripts/device_common.sh
gpu_tests 'attention_backward*gpu*,attention_bwd*gpu*'
ab_rounds 'BM_AttnBackward/D(64|128)/' 'BM_AttnBackward/D(64|128)/'
bench_rows batched "$B/gemm_bench" 'BM_(CublasBatched|TilejitBatchedPersistent(Tma)?)/'
