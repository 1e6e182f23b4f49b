#!/usr/bin/env bash
# v0.7, sixth call: the persistent attention forward (scripts/device_persist2.sh), then the narrow-N rows that
# call 5 cut. Carry tilejit_tests, attention_bench and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
bash "$(dirname "$0")/device_persist2.sh" "$@"
echo "== narrow N"
timeout -k 5 90 "$B/gemm_bench" --benchmark_min_time=0.1 \
  --benchmark_filter='BM_(TilejitGemm/narrow|CublasTN/8192/(96|192)/8192|TilejitSplitK/.*/narrow|TilejitV5Narrow|TilejitV5/64x(96|192)/6/)' \
  2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
