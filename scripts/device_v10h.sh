#!/usr/bin/env bash
# v0.10, eighth call: compute-sanitizer on the persistent forward's small case, which now reads its schedule table
# (causal D64: the producer loads the entries, the item loop carries the next one) and on the block-sparse producer
# loads: synccheck, racecheck, memcheck.
. "$(dirname "$0")/device_common.sh" "$@"
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in synccheck racecheck memcheck; do
  for tc in attention_persistent_gpu_small_for_the_sanitizers producer_loads_block_sparse_gemm_gpu_matches_f64; do
    timeout -k 5 60 "$SAN" --tool $tool "$B/tilejit_tests" -tc="$tc" > "$OUT/${tool}_$tc.txt" 2>&1; echo "$tool $tc rc $?"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases" "$OUT/${tool}_$tc.txt" | head -3
  done
done
