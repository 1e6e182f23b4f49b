#!/usr/bin/env bash
# v0.8 call 4: host time per call (cuBLAS, the library with its last call's descriptors reused and no formatting on
# the launch path, a bare launch), then the bf16-C library beside cuBLAS writing bf16 and the fixed 128x256/4
# TMA-store kernel on the large shapes, and the small / narrow rows. Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 120 "$B/tilejit_tests" -tc='gemm_store_race_gpu*,gemm_reuses*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -10
echo "== host time per call"
timeout -k 5 60 "$B/gemm_bench" --benchmark_filter='BM_Host' --benchmark_min_time=0.2 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
echo "== bf16 C, large"
timeout -k 5 200 "$B/gemm_bench" --benchmark_filter='BM_(CublasTNBf16Out|TilejitGemmBf16Out)/large|BM_TilejitV6Store/128x256/4/' --benchmark_min_time=0.1 > "$OUT/bench1.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench1.txt" | sed 's/ \+/ /g' | cut -c1-150
echo "== bf16 C, small and narrow"
timeout -k 5 120 "$B/gemm_bench" --benchmark_filter='BM_(CublasTNBf16Out|TilejitGemmBf16Out)/(small|narrow)' --benchmark_min_time=0.1 > "$OUT/bench2.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench2.txt" | sed 's/ \+/ /g' | cut -c1-170
