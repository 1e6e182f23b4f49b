#!/bin/bash
# v0.17 call 1: GEMM tiles of three consumer warp groups (192x192/3, 192x128/4; num_warps = 12) — their GPU tests,
# then their rows beside cuBLAS (bf16 C), the store race's 128x256/4 and 128x192/4 and the library call on the large
# shapes; the tiny-launch profiler overhead with the two halves of CUPTI's cost paired (BM_CuptiKnobs/9, /10), run
# once as it is and once pinned to one CPU (taskset), to see whether the spread between runs is the scheduler's.
source scripts/device_common.sh
gpu_tests 'gemm_v6_store_gpu*'
bench_rows fixed "$B/gemm_bench" 'BM_CublasTNBf16Out/large|BM_TilejitV6Store/.*/large'
bench_rows library "$B/gemm_bench" 'BM_CublasTNBf16Out/large|BM_TilejitGemmBf16Out/large'
for pin in "" "taskset -c 5"; do
  echo "== profiler ${pin:-unpinned}"
  timeout -k 5 150 $pin "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired|BM_CuptiKnobs/(0|9|10)$' > "$OUT/prof_${pin:+pinned}.txt" 2>&1; echo "rc $?"
  grep -E "^BM_|rror" "$OUT/prof_${pin:+pinned}.txt" | sed 's/ \+/ /g' | cut -c1-250
done
