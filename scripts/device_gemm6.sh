#!/usr/bin/env bash
# The library GEMM (examples/gemm/gemm.hpp) with rung-6 candidates in its tuner's race: its GPU tests (the 16-config
# race at 4096^3 + reuse of the stored winner by a second process; every candidate forced in turn on a ragged shape
# against f64; split-K for small M), then BM_TilejitGemm/large (the library call; the label names the config that
# won) beside BM_CublasTN/large at 4096^3, 8192^3 and Llama-3-8B's QKV / gate+up / down (and attention output) at
# M = 4096 and 16384. Under 4 minutes on an H200 (every step has a timeout, 230 s in all: a hang costs its timeout, not the session).
# Build here first:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN' -DTILEJIT_WERROR=ON
#   cmake --build build-rel -j2 --target tilejit_tests gemm_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/gemm_bench .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/gemm_bench .carry/tilejit_tests
# then run this script on the device with carry [".carry"]: bash scripts/device_gemm6.sh
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/$B
timeout -k 5 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== the 16-config race at 4096^3 (parallel compiles fill the kernel cache) and a second process reusing the winner"
timeout -k 5 55 "$B/tilejit_tests" -tc='gemm_tuned_gpu_16*' > "$OUT/race_test.txt" 2>&1; echo "rc $? (124: timed out)"
grep -E "ERROR|test cases|assertions|CRASH|skipping|tuned in|reused|^ *[* ] BM=|total" "$OUT/race_test.txt" | head -40
echo "== every candidate forced through the library call (2000x3008x144, ragged tiles) against f64; split-K"
timeout -k 5 45 "$B/tilejit_tests" -tc='gemm_tuned_gpu_every*,gemm_split_k_gpu*' > "$OUT/library_tests.txt" 2>&1; echo "rc $? (124: timed out)"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/library_tests.txt" | head -20
echo "== bench: the library call (tuned on first use of each shape) beside cuBLAS TN"
timeout -k 5 115 "$B/gemm_bench" --benchmark_filter='BM_CublasTN/large|BM_TilejitGemm/large' \
  --benchmark_min_time=0.1 > "$OUT/bench.txt" 2>&1; echo "bench rc $?"
grep -E "BM_|rror" "$OUT/bench.txt" | sed 's/ \+/ /g'
timeout -k 5 5 cp -r "$TILEJIT_CACHE_DIR/autotune" "$OUT/autotune" 2>/dev/null || true  # the stored winners
