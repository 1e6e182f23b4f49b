#!/usr/bin/env bash
# v0.8 call 2: the library GEMM with a bf16 C (Gemm<bf16, bf16>: the store race of TMA-store epilogues) — every
# store candidate, the f32-race-plus-rounding and small-M paths against f64 on the GPU, the TMA-store kernel's GPU
# test after the 16-byte-chunk fix (N = 700 masked, 712 by TMA), the f32 race's candidates and small-M paths again
# (Gemm changed), then the library on the large / small / narrow shapes beside cuBLAS, f32 and bf16 C, same call.
# Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 240 "$B/tilejit_tests" -tc='gemm_store_race_gpu*,gemm_v6_store_gpu*,gemm_tuned_gpu*,gemm_small_m_and_narrow_n_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
echo "== memcheck on the N = 700 / 712 TMA-store test"
timeout -k 5 90 /usr/local/cuda/bin/compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='gemm_v6_store_gpu*' 2>&1 | grep -E "ERROR SUMMARY|test cases" | head -3
echo "== library, f32 and bf16 C, beside cuBLAS"
timeout -k 5 280 "$B/gemm_bench" --benchmark_filter='BM_(CublasTN|TilejitGemm|CublasTNBf16Out|TilejitGemmBf16Out)/(large|small|narrow)' \
  --benchmark_min_time=0.1 > "$OUT/bench.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench.txt" | sed 's/ \+/ /g' | cut -c1-230
