#!/bin/bash
# v0.35: the library forward beside torch SDPA (cuDNN and flash backends) at the 700 W power cap: every head dim and
# mask, 3 s a row each, one after another (ours, cuDNN, flash); D = 96 exact against the same kernel padded to 128;
# D = 256 causal's two schedules. Usage: scripts/device_v35f.sh [.carry]  (carry attention_bench)
source scripts/device_common.sh
for D in 64 96 128 256; do
  for C in full causal; do
    sustained "ours D$D $C" "^BM_AttnForward/D$D/$C/"
    timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform cudnn
    timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform flash
  done
done
for C in full causal; do
  sustained "D96 exact $C" "^BM_FlashFwdPingPongEdge/D96/$C/128x128/2/"
  sustained "D96 padded $C" "^BM_FlashFwdPingPongEdgePadded/D96/$C/128x128/2/"
done
sustained "D256 causal per_item" "^BM_AttnForwardper_item/D256/causal/"
sustained "D256 causal persistent" "^BM_AttnForwardpersistent/D256/causal/"
