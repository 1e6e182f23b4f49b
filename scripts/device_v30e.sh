#!/bin/bash
# v0.30 call 5: the library's D = 64 full forward with K and V through the rank-2 view (192-row items, S a multiple of
# 128): GPU tests of the library forward, then the library beside torch SDPA in one call.
# Usage: scripts/device_v30e.sh [.carry]
source scripts/device_common.sh
gpu_tests 'attention_library_forward_gpu_matches_f64'
F='BM_AttnForward/D(64|96|128|256)/|BM_FlashFwdPersistentEvenN/D64/full/192x128/2'
torch_rounds "$F"
