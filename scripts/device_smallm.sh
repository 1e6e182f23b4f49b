#!/usr/bin/env bash
# Small M (decode) through the swap-AB kernel and narrow N through 128-row split-K blocks (examples/gemm/gemm.hpp,
# matmul_small_m.hpp; docs/gemm.md "Side rung: small M and narrow N"): their GPU tests against f64, then the library
# call beside cuBLAS TN and the alternatives (split counts, the former small-M path, narrow-N candidates) in one run.
# Carry tilejit_tests and gemm_bench.
source "$(dirname "$0")/device_common.sh"
timeout -k 5 150 "$B/tilejit_tests" -tc='gemm_small_m*,gemm_narrow_n*,gemm_fixed_paths*,gemm_library_interpreter_takes*' \
  > "$OUT/tests.txt" 2>&1; echo "tests rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -30
timeout -k 5 200 "$B/gemm_bench" --benchmark_min_time=0.1 \
  --benchmark_filter='BM_(TilejitGemm/(small|narrow)|CublasTN/(small/|8192/(96|192)/8192)|TilejitSmallM|TilejitSplitK|TilejitV5Narrow|TilejitV5/64x(96|192)/6/)' \
  2>&1 | tee "$OUT/bench.txt" | grep -E "BM_|rror"; echo "bench rc ${PIPESTATUS[0]}"
