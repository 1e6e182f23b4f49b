#!/usr/bin/env bash
# v0.9, seventh call: the review helper's GPU case (packed carries, zero accumulators and resident waits on the
# H200: f16, nested and persistent warp-specialised loops, s8/e4m3/tf32 zero accumulators, loops that run zero
# times, a cluster of two), then Nsight Compute on the bf16 GEMM beside cuBLAS (scripts/device_v09g_ncu_gemm.sh).
# Carry tilejit_tests and gemm_bench with their libraries.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 90 "$B/tilejit_tests" -tc='packed_zero_resident_edges_gpu*,packed_carry_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
bash "$(dirname "$0")/device_v09g_ncu_gemm.sh" "$@"
