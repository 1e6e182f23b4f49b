#!/bin/bash
# v0.13 call: device events after the review, the fused TMA-store GEMM (tests + bench rows beside cuBLAS), memcheck.
source scripts/device_common.sh
gpu_tests '*device_event*,*fused_store*gpu*,gemm_v6_store_gpu*,gemm_v5_gpu*'
grep -E "smallest" "$OUT/tests.txt" | head
echo "== memcheck"
timeout -k 5 200 compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='gemm_v6_fused_store_gpu*' > "$OUT/memcheck.txt" 2>&1; echo "rc $?"
grep -E "ERROR SUMMARY|test cases" "$OUT/memcheck.txt"
bench_rows devev "$B/profiler_bench" "BM_DeviceEvents"
grep -o "instrumented_us.*" "$OUT/bench_devev.txt"
bench_rows fused "$B/gemm_bench" "BM_CublasTN/|BM_CublasTNBf16Out|BM_TilejitV6Store/128x256/4|BM_TilejitV6FusedStore|BM_TilejitV6Fused/"
