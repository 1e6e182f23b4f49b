#!/usr/bin/env bash
# v0.8 call 5: a cold 16-config race (empty kernel cache, first test of the process), the GEMM GPU tests at the final
# code (store race incl. small M rounding in the kernel, the f32 race's candidates, small M / narrow N), then the
# bf16-C library beside cuBLAS-bf16 on the small and large shapes. Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== cold race"
TILEJIT_CACHE_DIR=/tmp/tj-cold timeout -k 5 60 "$B/tilejit_tests" -tc='gemm_tuned_gpu_16_configs*' > "$OUT/cold.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|tuned in|reused|total " "$OUT/cold.txt" | head -8
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='gemm_store_race_gpu*,gemm_small_m_and_narrow_n_gpu*,gemm_tuned_gpu_every*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -10
echo "== bf16 C, small and large"
timeout -k 5 200 "$B/gemm_bench" --benchmark_filter='BM_(CublasTNBf16Out|TilejitGemmBf16Out)/(small|large)' --benchmark_min_time=0.1 > "$OUT/bench.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench.txt" | sed 's/ \+/ /g' | cut -c1-120
