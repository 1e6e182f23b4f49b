#!/usr/bin/env bash
# v0.6 (2026-11-29, fifth session), one device call: the forward with edge-masked key blocks, heavy-first causal
# order and P.V left in flight during the softmax (overlap_register_wgmma), A/B against P.V waited at once;
# the library forward and backward (the codegen change touches the backward's register-A wgmma too); then the
# CUPTI knobs (scripts/device_cupti.sh). Build and carry: tilejit_tests, attention_bench, profiler_bench as
# scripts/device_run_pending.sh says.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests: Hopper forward, library forward and backward, Hopper backward, GEMM rung 5"
timeout 240 "$B/tilejit_tests" -tc='attention_tma*gpu*,attention_library_forward_gpu*,attention_backward_library_gpu*,attention_bwd_tma_gpu*,gemm_v5_gpu_matches*,gemm_v5_warp*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
echo "== forward: edge-masked (overlap on / off / turns), padded D96, library forward and backward"
timeout 200 "$B/attention_bench" --benchmark_filter='BM_FlashFwdPingPongEdge|BM_AttnForward|BM_AttnBackward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== CUPTI"
bash scripts/device_cupti.sh "$B"
