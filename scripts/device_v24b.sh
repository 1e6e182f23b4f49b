#!/bin/bash
# (TJX_NOPAIR / TJX_OLDPITCH / TJX_NOPACK were temporary switches in src/codegen/codegen.cpp for this measurement,
# removed before the commit: today both halves of each A/B run the final code.)
# v0.24 call 2: layout conversions of 16-bit tiles through shared memory in 32-bit words (register pairs at
# adjacent columns), held packed when the target layout pairs every register (an mma.sync operand): the off-Hopper
# backward, whose P and dS go from the accumulator layout to operand A that way, against the element-by-element
# conversion (TJX_NOPAIR=1: the code generator as at call 1) in alternating rounds; then the GPU cases that convert.
source scripts/device_common.sh
R='BM_FlashBwdSm80/.*/resident/kv64x64/q64x64'
for round in 1 2; do
  TJX_NOPAIR=1 ROW_LIMIT=120 bench_rows "old$round" "$B/attention_bench" "$R"
  ROW_LIMIT=120 bench_rows "new$round" "$B/attention_bench" "$R"
done
gpu_tests 'attention_backward_library*gpu*,*off_hopper*gpu*,*decode*gpu*,small_dots_gpu*,*convert*gpu*,*layout*gpu*'
echo "== racecheck"; sanitize racecheck 'attention_backward_library_off_hopper_gpu*' 120
