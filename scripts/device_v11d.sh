#!/usr/bin/env bash
# v0.11, fourth call: every GPU test of the suite at this session's code (nested ping-pong, arch-aware
# rematerialisation, the 8-stage 64x96 store tile, and the review's fixes: for_range's run-time step check, the
# cache's format 2, the interpreter's integer wrap, attention's range checks). Carry build-rel's toy_gpu plugin too.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests '*gpu*'
echo "skipped for no GPU: $(grep -c 'no GPU: skipping' "$OUT/tests.txt")"
