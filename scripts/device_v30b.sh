#!/bin/bash
# v0.30 call 2: GPU tests of the library forward's 192-row items (D = 64) and the persistent kernel's cases; the
# library beside torch SDPA (flash, cuDNN) in one call, two rounds; 192 x 64 items at D = 96 / 128; the D = 96
# exact / padded pair. Usage: scripts/device_v30b.sh [.carry]
source scripts/device_common.sh
gpu_tests 'attention_library_forward_gpu*,attention_persistent_gpu_matches*,attention_library_persistent_forward_gpu*'
F='BM_AttnForward/D(64|96|128|256)/|BM_FlashFwdPersistent(EvenN)?/D(96|128)/(full|causal)/192x64|BM_FlashFwdPersistent/D96/full/192x96/3|BM_FlashFwdPingPongEdge(Padded)?/D96/(full|causal)/128x128/2'
torch_rounds "$F" 14
