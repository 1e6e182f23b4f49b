#!/usr/bin/env bash
# v0.6, last call: the backward with producer warp groups (dK/dV's loop nested in the loop over query heads,
# which the code generator now specialises; dQ's loop top-level), GPU tests of those, and the library calls
# after the D64-causal switch. Carry tilejit_tests and attention_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests: Hopper backward (producer warp groups included), library forward and backward, conversions"
timeout -k 5 150 "$B/tilejit_tests" -tc='attention_bwd_tma_gpu*,attention_library_forward_gpu*,attention_backward_library_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
echo "== backward: library tiles without / with producer warp groups; the library calls"
timeout -k 5 150 "$B/attention_bench" --benchmark_filter='BM_FlashBwdTma/D(64|128)/(full|causal)$|BM_FlashBwdTmaWs|BM_AttnForward|BM_AttnBackward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
