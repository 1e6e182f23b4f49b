#!/usr/bin/env bash
# v0.10, fourth call: 192-row items over three consumer warp groups (num_warps = 12, a radix-3 warp digit) in the
# persistent forward. GPU tests of the persistent forward (192-row cases included), compute-sanitizer racecheck on a
# small 192-row case; then the 192- and 128-row rows at D = 64 / 96, two rounds.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*'
ROWS='BM_FlashFwdPersistent(EvenN)?/D(64|96)/(full|causal)/(128|192)x128|BM_AttnForward/D64'
bench_rows r1 "$B/attention_bench" "$ROWS"
bench_rows r2 "$B/attention_bench" "$ROWS"
