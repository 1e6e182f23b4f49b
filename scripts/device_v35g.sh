#!/bin/bash
# v0.35: 16-bit stores from mma / wgmma accumulators transposed within each quad (16-byte vectors): GPU tests of the
# stores and of the forward / backward that use them, then the forward at the power cap, before (attention_bench_old)
# and after, alternated. Usage: scripts/device_v35g.sh [.carry]  (carry rs_gpu: a test binary of test_quad_store.cpp
# and the attention / GEMM example tests; attention_bench and attention_bench_old)
source scripts/device_common.sh
carried_tests 'quad_store_gpu*' 30 q
old_new_cap 2 D128/full D256/causal
# (An -O1 test binary: the library forward's case needs more than 60 s; its first 60 s passed 7,253,065 assertions.)
carried_tests 'attention_library_forward_gpu_matches_f64' 200 f
carried_tests 'attention_library_persistent_forward_gpu_matches_f64' 100 p
carried_tests 'attention_backward_library_gpu_matches_f64' 100 b
