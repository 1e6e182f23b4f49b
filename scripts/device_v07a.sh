#!/usr/bin/env bash
# v0.7, first call: the GPU tests of what v0.6 changed after its device time was spent (codegen wait fixes, the
# FA3 j = 0 V coordinate, NaN rows in the forward epilogue), the library forward / backward / decode rows, the
# library GEMM on three shapes beside cuBLAS, torch SDPA in the same call, and the cuBLAS kernel names.
# Carry tilejit_tests, attention_bench and gemm_bench (scripts/device_run_pending.sh says how).
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 300 "$B/tilejit_tests" -tc='attention_tma*gpu*,attention_library_forward_gpu*,attention_backward_library_gpu*,attention_bwd_tma_gpu*,attention_decode_tma*gpu*,gemm_v5_gpu*,gemm_v6_gpu*,gemm_tuned_gpu*,gpu_*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
echo "== attention library rows"
timeout -k 5 150 "$B/attention_bench" --benchmark_filter='BM_AttnForward|BM_AttnBackward|BM_Decode/|BM_FlashFwdPingPongEdgePadded' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== GEMM library vs cuBLAS"
timeout -k 5 120 "$B/gemm_bench" --benchmark_filter='BM_(TilejitGemm/large|CublasTN)/(4096/4096/4096|16384/6144/4096|8192/96/8192|8192/192/8192)|BM_TilejitV5/64x(96|192)' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; tail -28 "$OUT/torch.txt"
echo "== cuBLAS kernel names"
timeout -k 5 60 python3 bench/cublas_kernel_names.py 2>&1 | tail -12
