#!/bin/bash
# v0.18 call 3: the attention fixes on the GPU — decode with 32 and 48 query heads per KV head (D = 256's pointer
# kernel and the TMA kernel), varlen, the library forward / backward / decode cases — and the launch checks; then
# memcheck on the decode cases.
source scripts/device_common.sh
gpu_tests 'attention*gpu*,*decode*gpu*,launch*,desc_rank*gpu*'
echo "== memcheck (attention_more: decode groups above 16, varlen)"
sanitize memcheck 'attention_more_gpu*' 150
