#!/bin/bash
# v0.16 call 3: the off-Hopper forward (mma.sync + cp.async, compiled for sm_90 as for an A100) masking only the edge
# key blocks, against the previous build's every-block masking, alternated, torch SDPA (flash = FlashAttention-2)
# in the same call; its GPU tests first.
source scripts/device_common.sh
gpu_tests 'attention_library_forward_off_hopper*,attention_tma_cp_async_gpu*,attention_library_forward_gpu*'
ab_rounds 'BM_AttnForwardMmaSync' 'BM_AttnForwardMmaSync'
