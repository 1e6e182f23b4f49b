#!/usr/bin/env bash
# v0.10, fifth call: every GPU test of the suite at the final code (the producer's scalar loads and carries, the
# radix-3 warp coordinates, the schedule table), the 12- and 24-warp blocked kernels among them.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests '*gpu*'
grep -c "no GPU: skipping" "$OUT/tests.txt"
