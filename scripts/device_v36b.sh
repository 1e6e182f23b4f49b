#!/bin/bash
# v0.36 call 3: D = 64 with block 0 peeled out of the key loop (attention_bench_peel: -DTILEJIT_FA3_PEEL_MIN_D=64)
# against the loop from block 0 (attention_bench), alternated at the power cap; then the library forward beside torch
# SDPA (cuDNN, flash) at the cap, every head dim and mask, 3 s a row (as v0.35's device_v35f.sh), with D = 96 exact
# against padded. Usage: scripts/device_v36b.sh [.carry]  (carry attention_bench, attention_bench_peel)
source scripts/device_common.sh
for r in 1 2; do
  for b in attention_bench attention_bench_peel; do
    sustained "$b D64 causal" '^BM_AttnForward/D64/causal/' 3 $b
    sustained "$b D64 full" '^BM_AttnForward/D64/full/' 3 $b
    sustained "$b D64 causal 128x128" '^BM_FlashFwdPersistent/D64/causal/128x128/2/' 3 $b
  done
done
cap_table
