#!/usr/bin/env bash
# v0.9, third call: two code-generator changes on top of the packed P — a zero accumulator (S = Q·Kᵀ) is not
# written register by register (the first wgmma has scale-d = 0), and a resident block (Q) is waited for once
# before the key loop instead of per iteration. GPU tests of every wgmma kernel family they touch (forward,
# backward, decode, GEMM rungs 4-7, small M, the packed carry), then the library forward of this build and of
# the previous commit (attention_bench_packed, 999ddcb) alternated twice, and the persistent forward rows.
# Carry tilejit_tests, attention_bench and attention_bench_packed with their libraries.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 300 "$B/tilejit_tests" -tc='packed_carry_gpu*,attention_tma*gpu*,attention_library_forward_gpu*,attention_persistent_gpu_matches*,attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_decode_tma*gpu*,gemm_v4_gpu*,gemm_v5_gpu_matches*,gemm_v5_warp*,gemm_v6_gpu_matches*,gemm_v7_gpu*,gemm_small_m*gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
F='BM_AttnForward/'
bench_rows base_1 "$B/attention_bench_packed" "$F"; bench_rows new_1 "$B/attention_bench" "$F"; bench_rows new_2 "$B/attention_bench" "$F"; bench_rows base_2 "$B/attention_bench_packed" "$F"
bench_rows new_3 "$B/attention_bench" 'BM_AttnForwardPersistent/|BM_FlashFwdPersistent(EvenN)?/D(64|128)/|BM_AttnBackward/'
