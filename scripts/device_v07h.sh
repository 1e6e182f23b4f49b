#!/usr/bin/env bash
# v0.7, last call: the GPU tests at the final commit — first those whose code changed after their last GPU run
# (narrow N through run_narrow_n), then the broad ones the merged code generator touches. Carry tilejit_tests.
. "$(dirname "$0")/device_common.sh" "$@"
run() {
  echo "== $1"
  timeout -k 5 "$2" "$B/tilejit_tests" -tc="$1" > "$OUT/t.txt" 2>&1; echo "rc $?"
  grep -E "ERROR|test cases|assertions|CRASH" "$OUT/t.txt" | head -8
}
run 'gemm_small_m_and_narrow_n_gpu*' 60
run 'gpu_*,device: CUDA*,gemm_v5_gpu*,gemm_v6_gpu*,gemm_v7_gpu*,attention_tma_warp_specialised_gpu*,attention_decode_tma_library_gpu*' 120
run 'profiler cupti gpu: tilejit kernels*,profiler cupti gpu: a captured*' 40
