#!/bin/bash
# v0.35: the library forward beside torch SDPA (cuDNN and flash backends) at the 700 W power cap: every head dim and
# mask, 3 s a row each, one after another (ours, cuDNN, flash); D = 96 exact against the same kernel padded to 128;
# D = 256 causal's two schedules. Usage: scripts/device_v35f.sh [.carry]  (carry attention_bench)
source scripts/device_common.sh
cap_table
sustained "D256 causal per_item" "^BM_AttnForwardper_item/D256/causal/"
sustained "D256 causal persistent" "^BM_AttnForwardpersistent/D256/causal/"
