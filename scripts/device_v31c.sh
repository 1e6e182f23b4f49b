#!/bin/bash
# v0.31 call 3: the rest of the GPU cases the peel touches (the per-item FA3-order kernels, varlen, the backward's
# forward), then compute-sanitizer racecheck and memcheck on the small persistent cases (the peeled D = 96 and 128
# kernels' first-K buffer reused item after item).
# Usage: scripts/device_v31c.sh [.carry]
source scripts/device_common.sh
gpu_tests 'attention_tma_warp_specialised_gpu_matches_f64,attention_more_gpu_matches_f64,attention_persistent_gpu_small_for_the_sanitizers'
echo "== racecheck"; sanitize racecheck 'attention_persistent_gpu_small_for_the_sanitizers' 120
echo "== memcheck"; sanitize memcheck 'attention_persistent_gpu_small_for_the_sanitizers' 90
