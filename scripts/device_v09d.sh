#!/usr/bin/env bash
# v0.9, fourth call: the forward schedule chosen per head dim and mask (FwdSchedule::automatic: persistent at
# D = 64 and full D = 128), wgmma descriptors made once per product and advanced per k step, on top of v09c's
# zero accumulator and once-waited Q. GPU tests of every wgmma family, then the library rows of this build
# (automatic, per_item, persistent) and of 999ddcb (attention_bench_packed) alternated, torch SDPA in the same
# call, and the SASS of two forward kernels (.carry/*.cubin, compiled here by NVRTC) for instruction counts.
# Carry tilejit_tests, attention_bench, attention_bench_packed, the cubins and the libraries.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 300 "$B/tilejit_tests" -tc='packed_carry_gpu*,attention_tma*gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,attention_persistent_gpu_matches*,attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_decode_tma*gpu*,gemm_v4_gpu*,gemm_v5_gpu_matches*,gemm_v5_warp*,gemm_v6_gpu_matches*,gemm_v6_store_gpu*,gemm_v7_gpu*,gemm_small_m*gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
bench_rows new_1 "$B/attention_bench" 'BM_AttnForward'; bench_rows base_1 "$B/attention_bench_packed" 'BM_AttnForward'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows new_2 "$B/attention_bench" 'BM_AttnForward/'
echo "== SASS"
for c in "$B"/*.cubin; do cuobjdump -sass "$c" > "$OUT/$(basename "$c" .cubin).sass" 2>&1; echo "$c rc $?"; done
