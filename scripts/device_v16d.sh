#!/bin/bash
# v0.16 call 4: the final off-Hopper dispatch (edge-masked full, every-block causal): its GPU tests and rows.
source scripts/device_common.sh
gpu_tests 'attention_library_forward_off_hopper*,attention_library_forward_gpu*,attention_library_persistent*gpu*'
bench_rows final "$B/attention_bench" 'BM_AttnForwardMmaSync|BM_AttnForward/D96'
