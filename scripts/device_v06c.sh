#!/usr/bin/env bash
# v0.6, third call: the forward's BLOCK_N sweep at D = 128 (96 = 32x3 and 112 = 16x7 beside 128), GPU tests of
# those tiles, the library forward, and torch SDPA (flash, cuDNN) in the same call. Carry tilejit_tests and
# attention_bench (scripts/device_run_pending.sh says how).
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests of the Hopper forward (BLOCK_N 96 / 112 cases included)"
timeout -k 5 150 "$B/tilejit_tests" -tc='attention_tma_warp_specialised_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
echo "== forward BLOCK_N sweep and the library call"
timeout -k 5 150 "$B/attention_bench" --benchmark_filter='BM_FlashFwdPingPongEdge(Turns)?/D(96|128)/.*/128x(96|112|128)/|BM_AttnForward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; tail -28 "$OUT/torch.txt"
