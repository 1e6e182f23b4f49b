#!/usr/bin/env bash
# v0.10, sixth call: the 12- / 24-warp blocked kernels after the owner-predicate fix (mixed-radix warp digits
# above a radix-3 one), and the persistent forward's GPU tests (192-row items included) again.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'npot_warps*,attention_persistent_gpu*,producer_loads*gpu*'
