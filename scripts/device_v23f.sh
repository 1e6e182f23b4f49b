#!/bin/bash
# v0.23 call 6: the library backward off Hopper on cp.async rings (and on Hopper, whose launch code moved): GPU
# tests, racecheck on the off-Hopper case; then the mma.sync ceiling (registers only).
source scripts/device_common.sh
gpu_tests 'attention_backward_library*gpu*'
echo "== racecheck"; sanitize racecheck 'attention_backward_library_off_hopper_gpu*' 100
bench_rows peak "$B/gemm_bench" 'BM_MmaSyncPeak/'
