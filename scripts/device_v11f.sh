#!/usr/bin/env bash
# v0.11, sixth call: after the second review's fixes (clusters' grid rule follows the compiled kernel, autotuner
# argument errors, compile_for_arch diagnostics, narrow TMA rows reported) and the ping-pong review's tests: the GPU
# tests they touch, then compute-sanitizer synccheck / racecheck on the small persistent case (ping-pong included)
# and the persistent GEMM with ping-pong.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'cluster_edges_gpu*,gemm_v6_store_gpu*,gemm_tuned_gpu*,profiler*gpu*,attention_persistent_gpu_small*,npot_warps_gpu*,gemm_store_race_gpu*'
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in synccheck racecheck; do
  for tc in attention_persistent_gpu_small_for_the_sanitizers gemm_v6_store_gpu_pingpong_persistent_matches_f64; do
    timeout -k 5 90 "$SAN" --tool $tool "$B/tilejit_tests" -tc="$tc" > "$OUT/${tool}_$tc.txt" 2>&1; echo "$tool $tc rc $?"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases" "$OUT/${tool}_$tc.txt" | head -3
  done
done
