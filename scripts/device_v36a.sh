#!/bin/bash
# v0.36 call 1: the quad-transposed 16-bit store on the GPU (its tests, mma.sync included; the persistent forward and
# the backward at the new store code), its speed at the power cap against the previous store (attention_bench_old,
# alternated), and the D = 64 causal item shapes at the cap. Usage: scripts/device_v36a.sh [.carry]
# (carry rs_gpu: an -O1 test binary of test_quad_store.cpp and the attention / GEMM example tests; attention_bench,
# attention_bench_old)
source scripts/device_common.sh
carried_tests 'quad_store_gpu*' 40 q
old_new_cap 2 D128/full D256/causal
for r in 1 2; do
  sustained "D64 causal library (192x96)" '^BM_AttnForward/D64/causal/' 3
  sustained "D64 causal 128x128/2" '^BM_FlashFwdPersistent/D64/causal/128x128/2/' 3
  sustained "D64 causal 192x128/2" '^BM_FlashFwdPersistent/D64/causal/192x128/2/' 3
done
carried_tests 'attention_library_persistent_forward_gpu_matches_f64' 100 p
carried_tests 'attention_backward_library_gpu_matches_f64' 120 b
