#!/usr/bin/env bash
# v0.8 call 6: the review's GPU cases (scripts/device_review8.sh: 16-bit integer packing, integer-cast TMA stores,
# TMA store boxes starting mid 16-byte chunk; the GEMM store tests again), then f16 in / f16 out, the library
# (Gemm<f16, f16>) beside cuBLAS on the large shapes. Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
bash "$(dirname "$0")/device_review8.sh" "$B"
echo "== f16 C"
timeout -k 5 150 "$B/gemm_bench" --benchmark_filter='BM_(CublasTNF16|TilejitGemmF16)/large' --benchmark_min_time=0.1 > "$OUT/bench.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench.txt" | sed 's/ \+/ /g' | cut -c1-120
