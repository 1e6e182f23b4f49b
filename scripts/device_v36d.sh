#!/bin/bash
# v0.36 call 5: the library forward (block 0 peeled at causal D = 64, causal D = 256 persistent) beside torch SDPA
# (cuDNN, flash) at the 700 W power cap: every head dim and mask, 3 s a row, ours then cuDNN then flash; D = 96 exact
# against padded. Usage: scripts/device_v36d.sh [.carry]  (carry attention_bench)
source scripts/device_common.sh
cap_table
