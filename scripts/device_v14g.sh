#!/bin/bash
# v0.14 call 7: every GPU test at the final code (plugin cases with the toy plugin carried), then racecheck and
# memcheck on the attention forward's cp.async path.
source scripts/device_common.sh
gpu_tests '*gpu*'
echo "== racecheck / memcheck (attention, cp.async path)"
sanitize racecheck 'attention_tma_cp_async_gpu*' 150
sanitize memcheck 'attention_tma_cp_async_gpu*' 100
