#!/bin/bash
# v0.16 call 1: D = 96 held exactly in shared memory (64-byte slabs, the 64B swizzle). The narrow-slab GPU test
# first (TMA boxes and wgmma descriptors must agree), then the D = 96 forward rows beside the previous build's
# (attention_bench_old) alternated, with torch SDPA in the same call.
source scripts/device_common.sh
gpu_tests 'sm90_edge_narrow*,attention_tma_gpu*'
OLD='BM_FlashFwdPingPongEdge/D96/.*/128x128/2|BM_FlashFwdPingPongEdgePadded/D96|BM_FlashFwdPersistent/D96/causal/128x128/2|BM_FlashFwdPersistentEvenN/D96/full/128x128/2|BM_AttnForward/D96'
NEW='BM_FlashFwdPingPongEdge/D96|BM_FlashFwdPingPongEvenN/D96|BM_FlashFwdPingPongEdgePadded/D96|BM_FlashFwdPersistent/D96/causal|BM_FlashFwdPersistentEvenN/D96/full/128x128|BM_AttnForward/D96'
ab_rounds "$OLD" "$NEW"
