#!/bin/bash
# v0.14 call 7: every GPU test at the final code (plugin cases with the toy plugin carried), then racecheck and
# memcheck on the attention forward's cp.async path.
source scripts/device_common.sh
gpu_tests '*gpu*'
echo "== racecheck / memcheck (attention, cp.async path)"
timeout -k 5 150 compute-sanitizer --tool racecheck "$B/tilejit_tests" -tc='attention_tma_cp_async_gpu*' > "$OUT/racecheck.txt" 2>&1; echo "rc $?"
tail -2 "$OUT/racecheck.txt"
timeout -k 5 100 compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='attention_tma_cp_async_gpu*' > "$OUT/memcheck.txt" 2>&1; echo "rc $?"
tail -2 "$OUT/memcheck.txt"
