#!/usr/bin/env bash
# The edge-masked forward (2026-11-29, fifth session): FlashAttnFwdTma{PingPong,}Edge mask only the key blocks
# that can hold a masked key. GPU tests, synccheck, and speed beside the kernels the library uses today.
# Build and carry as scripts/device_run_pending.sh says (tilejit_tests, attention_bench).
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests of the Hopper forward (edge-masked cases included)"
timeout 200 "$B/tilejit_tests" -tc='attention_tma*gpu*,attention_library_forward_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool synccheck "$B/tilejit_tests" -tc='attention_tma_warp_specialised_gpu*' 2>&1 | tail -1
echo "== edge-masked vs every-block-masked vs no mask, 128x128/2, producer warp group"
timeout 300 "$B/attention_bench" --benchmark_filter='BM_FlashFwd(PingPongEdge|TmaEdge|PingPongNoTurns|PingPongEvenN|TmaWs)/D(64|96|128)/(full|causal)/128x128/2|BM_AttnForward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
