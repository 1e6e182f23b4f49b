#!/usr/bin/env bash
# v0.10, seventh call: the final code (after the review's fix: a block whose coordinates need a scalar its own
# pipelined loop carries is not copied by a TMA ring) — the persistent forward, the library forward, producer
# loads, the 12-warp kernels, the mixed-dot refusal.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,producer_loads*,npot_warps*,mixed_dots*'
