#!/usr/bin/env bash
# v0.6, fourth call: NaN-propagating max/min as one max.NaN instruction, the epilogue's reciprocal, and D = 64
# causal candidates. GPU tests (ops, the forward), then the forward rows and the library calls. Carry
# tilejit_tests and attention_bench (scripts/device_run_pending.sh says how).
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests: NaN max/min, all ops vs the interpreter, softmax, Hopper forward, library forward and backward"
timeout -k 5 200 "$B/tilejit_tests" -tc='gpu_*,attention_tma_warp_specialised_gpu*,attention_library_forward_gpu*,attention_backward_library_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
echo "== forward (v0.6 call 3: library 351.7 274.1 452.6 382.5 530.3 449.5) and D64 causal candidates; backward"
timeout -k 5 200 "$B/attention_bench" --benchmark_filter='BM_AttnForward|BM_AttnBackward|BM_FlashFwd(PingPongEdge|TmaEdge|TmaEdgeNoWs)/D64/causal|BM_FlashFwdPingPongEdge(Turns)?/D(96|128)/.*/128x128/|BM_FlashFwdPingPongEdgePadded' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
