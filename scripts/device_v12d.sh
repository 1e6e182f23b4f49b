#!/usr/bin/env bash
# v0.12, fourth call: decode before / after the two-step tail (the previous commit's attention_bench_old against
# this one's, alternated), the scaled-f8 GEMM GPU test, and the tiny-launch overhead again (two paired runs).
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'gemm_v5_gpu_matches_f64'
for r in 1 2; do
  bench_rows "old$r" "$B/attention_bench_old" 'BM_Decode/(llama3_8b|phi3_mini)/32'
  bench_rows "new$r" "$B/attention_bench" 'BM_Decode/(llama3_8b|phi3_mini)/32'
done
for r in 1 2; do
  echo "== tiny launches, run $r"
  timeout -k 5 150 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired' > "$OUT/tiny$r.txt" 2>&1; echo "rc $?"
  grep -E "BM_|rror" "$OUT/tiny$r.txt" | cut -c1-170
done
