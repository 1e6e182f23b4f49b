#!/usr/bin/env bash
# Rung 6 (examples/gemm/matmul_v6.hpp): the persistent, warp-specialised GEMM — its GPU tests, compute-sanitizer
# synccheck and racecheck on one small case, and its bench rows beside cuBLAS TN and rung 5 (with and without the
# producer warp group) at 4096^3, 8192^3 and 4096x28672x4096. Under 4 minutes on an H200 (every step has a timeout:
# a hang costs its timeout, not the session). Build here first:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN' -DTILEJIT_WERROR=ON
#   cmake --build build-rel -j2 --target tilejit_tests gemm_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/gemm_bench .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/gemm_bench .carry/tilejit_tests
# then run this script on the device with carry [".carry"]: bash scripts/device_persist.sh
. "$(dirname "$0")/device_common.sh" "$@"
SAN=/usr/local/cuda/bin/compute-sanitizer
echo "== rung 6 GPU tests (poisoned outputs, fresh inputs, every element against f64; also fills the kernel cache)"
timeout -k 5 75 "$B/tilejit_tests" -tc='gemm_v6_gpu*' > "$OUT/v6_gpu_tests.txt" 2>&1; echo "rc $? (124: timed out)"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/v6_gpu_tests.txt" | head -20
echo "== compute-sanitizer on gemm_v6_gpu_small_for_the_sanitizers (2 programs x 2 tiles, 5 K steps on 3 stages; WS and not)"
timeout -k 5 30 "$SAN" --tool synccheck "$B/tilejit_tests" -tc='gemm_v6_gpu_small_for_the_sanitizers' > "$OUT/synccheck.txt" 2>&1; echo "synccheck rc $?"
grep -E "ERROR SUMMARY|test cases" "$OUT/synccheck.txt"
timeout -k 5 45 "$SAN" --tool racecheck --racecheck-report all "$B/tilejit_tests" -tc='gemm_v6_gpu_small_for_the_sanitizers' > "$OUT/racecheck.txt" 2>&1; echo "racecheck rc $?"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test cases" "$OUT/racecheck.txt"
echo "== bench: cuBLAS TN, rung 5 (128x256/4, and with a producer warp group), rung 6 (persistent; Ws = producer warp group)"
S='(4096/4096/4096|8192/8192/8192|4096/28672/4096)/'
timeout -k 5 75 "$B/gemm_bench" --benchmark_filter="BM_CublasTN/$S|BM_TilejitV5(Ws)?/(128x256|256x128)/4/$S|BM_TilejitV6" \
  --benchmark_min_time=0.1 > "$OUT/bench.txt" 2>&1; echo "bench rc $?"
grep -E "BM_|rror" "$OUT/bench.txt" | sed 's/ \+/ /g'
