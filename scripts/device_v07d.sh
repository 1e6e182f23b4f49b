#!/usr/bin/env bash
# v0.7, fourth call: rung 7 persistent (rung 6 with clusters and B multicast): GPU tests, synccheck, and its rows
# beside cuBLAS TN, rung 6 and rung 7 on the large shapes. Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 100 "$B/tilejit_tests" -tc='gemm_v7_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
timeout -k 5 120 /usr/local/cuda/bin/compute-sanitizer --tool synccheck "$B/tilejit_tests" -tc='gemm_v7_gpu*' 2>&1 | grep -E "ERROR SUMMARY|test cases" | head -3
echo "== GEMM rung 7 persistent"
SH='(4096/4096/4096|8192/8192/8192|4096/6144/4096|4096/28672/4096|4096/4096/14336|16384/6144/4096)'
timeout -k 5 250 "$B/gemm_bench" --benchmark_filter="BM_(CublasTN|TilejitV7P/(128x256/4/2|128x256/3/2|256x128/4/2|128x256/4/4)|TilejitV7/128x256/4/2)/$SH" --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
