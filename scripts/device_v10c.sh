#!/usr/bin/env bash
# v0.10, third call: full attention's persistent programs back on the computed round robin (no table loads); the
# automatic schedule now persistent for every causal shape. GPU tests of the persistent forward and the library
# forward (every schedule); then the previous commit's library rows (attention_bench_old) and this one's,
# alternated, with torch SDPA between, and the exact-96 / padded-128 pairs.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*'
ab_rounds 'BM_FlashFwdPersistent/D(64|128)/full|BM_AttnForward/' 'BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward/|BM_FlashFwdPingPongEdge(Padded)?/D96/'
