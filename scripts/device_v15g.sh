#!/bin/bash
# v0.15 call 7: the second review's fixes on the GPU — GemmBatched with 70000 entries (split launches off Hopper, one
# persistent launch on it), varlen with every sequence empty on the Hopper path, and the attention cases around them.
source scripts/device_common.sh
gpu_tests 'gemm_batched*gpu*,attention_more_gpu*'
