#!/bin/bash
# v0.36 call 4: GPU tests of the forward with block 0 peeled at causal D = 64 (persistent, library, varlen), then
# D = 256 causal's two schedules at the power cap, alternated. Usage: scripts/device_v36c.sh [.carry]
# (carry rs_gpu: an -O2 test binary of test_attention_more / _persistent / _fwd_library.cpp; attention_bench)
source scripts/device_common.sh
carried_tests 'attention_persistent_gpu*' 120 p
carried_tests 'attention_library_persistent_forward_gpu_matches_f64' 120 lp
carried_tests 'attention_more_gpu_matches_f64' 120 m
carried_tests 'attention_library_forward_gpu_matches_f64' 200 f
for r in 1 2; do
  sustained "D256 causal per_item" "^BM_AttnForwardper_item/D256/causal/" 3
  sustained "D256 causal persistent" "^BM_AttnForwardpersistent/D256/causal/" 3
done
