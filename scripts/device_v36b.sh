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
for D in 64 96 128 256; do
  for C in full causal; do
    sustained "ours D$D $C" "^BM_AttnForward/D$D/$C/"
    timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform cudnn | tee -a "$OUT/sustained.txt"
    timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform flash | tee -a "$OUT/sustained.txt"
  done
done
for C in full causal; do
  sustained "D96 exact $C" "^BM_FlashFwdPingPongEdge/D96/$C/128x128/2/"
  sustained "D96 padded $C" "^BM_FlashFwdPingPongEdgePadded/D96/$C/128x128/2/"
done
