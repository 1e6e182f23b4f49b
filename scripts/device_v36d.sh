#!/bin/bash
# v0.36 call 5: the library forward (block 0 peeled at causal D = 64, causal D = 256 persistent) beside torch SDPA
# (cuDNN, flash) at the 700 W power cap: every head dim and mask, 3 s a row, ours then cuDNN then flash; D = 96 exact
# against padded. Usage: scripts/device_v36d.sh [.carry]  (carry attention_bench)
source scripts/device_common.sh
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
