#!/usr/bin/env bash
# What was built in the 2026-11-29 (third) session and has not run on a GPU yet: about 5 minutes on an H200,
# but the timeouts add up to 15, past one call's 10-minute limit — run it in two calls if in doubt (split at
# "== decode"). Build here first:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN'
#   cmake --build build-rel -j2 --target tilejit_tests attention_bench profiler_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/{attention_bench,profiler_bench} .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/*_bench .carry/tilejit_tests
# then run this script on the device with carry [".carry"].
#   1. the Hopper backward (examples/attention/flash_bwd_tma.hpp): correctness against f64, racecheck, speed
#      beside the pointer-load backward and torch's flash / cuDNN backward (same call)
#   2. FlashAttnFwdTmaOverlap (deferred wgmma waits): correctness, then speed against FlashAttnFwdTma
#   3. the sm_90a code-generation edge cases (test/examples/test_sm90_codegen_edges.cpp) that have GPU parts
#   4. the decode split-size sweep; the profiler's GEMM loop with periodic flushing
#   5. tj::trans of register tiles (register_trans_gpu*)
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== 1. backward through TMA + wgmma: f64 check, racecheck"
timeout 120 "$B/tilejit_tests" -tc='attention_bwd_tma*,attention_tma*,sm90_edge*,register_trans*' > "$OUT/bwd_tma.txt" 2>&1; echo "rc $?"
grep -E "ERROR|values|test cases|assertions" "$OUT/bwd_tma.txt" | head -20
timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='attention_bwd_tma_gpu*' 2>&1 | tail -1
echo "== the forward with the next scores in flight (FlashAttnFwdTmaOverlap) beside FlashAttnFwdTma"
timeout 120 "$B/attention_bench" --benchmark_filter='FlashFwdTma(Overlap)?/D.*/128x64/3' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== speed: BM_FlashBwdTma beside BM_FlashBwd, then torch"
timeout 150 "$B/attention_bench" --benchmark_filter='FlashBwd' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
timeout 150 python3 bench/attention_baselines.py 2>&1 | tail -12
echo "== decode: the split-size sweep (the library's choice is 2 programs per SM)"
timeout 100 "$B/attention_bench" --benchmark_filter='Decode' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== profiler: GEMM steps with periodic flushing every 100 steps after the buffer-pool fix (target < 2% over profiled)"
[ -x "$B/profiler_bench" ] && timeout 120 "$B/profiler_bench" --benchmark_filter='GemmLoop' 2>&1 | grep -E "^BM_|rror"
