#!/bin/bash
# v0.18 call 1: every GPU test after the session's runtime changes (integer arguments out of range, the autotune
# store's lock, the interpreter's bounds, rank-1 descriptors, the profiler's exiting-threads fix of v0.17), with the
# toy plugin carried; then memcheck on the descriptor cases (rank 1 included).
source scripts/device_common.sh
gpu_tests '*gpu*'
echo "== memcheck (descriptors of rank 1..5)"
sanitize memcheck 'desc_rank_n_gpu*' 80
