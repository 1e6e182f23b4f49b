#!/usr/bin/env bash
# GPU checks of the profiler, run on the device machine from the repository
# root over a carried .carry/prof (about 3 minutes on an H200):
#   1. every "profiler cupti gpu" test: CUPTI attribution, CUPTI held elsewhere,
#      the captured + replayed CUDA graph, PC sampling of one kernel;
#   2. every other profiler test (plugin ones excluded: their .so path is a build-tree path);
#   3. the overhead benchmark (tiny launches, GEMM loop, with / without session / flushing);
#   4. the long-job memory test: 10M tiny launches, a phase every 10K, periodic flushing.
#
# Build here (Release, rpath $ORIGIN so the carried libraries are found):
#   cmake -S . -B build/prof2 -DCMAKE_BUILD_TYPE=Release -DTILEJIT_WERROR=ON -DCMAKE_BUILD_RPATH='$ORIGIN'
#   cmake --build build/prof2 -j2 --target tilejit_tests profiler_bench
#   rm -rf .carry/prof && mkdir -p .carry/prof
#   cp build/prof2/test/tilejit_tests build/prof2/bench/profiler_bench .carry/prof/
#   cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 /usr/lib/x86_64-linux-gnu/libxxhash.so.0 \
#         /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian .carry/prof/
#   strip .carry/prof/tilejit_tests .carry/prof/profiler_bench
# Run there:   scripts/device_run_profiler.sh   (carry [".carry"]); logs go to $OUT.
set -uo pipefail
out=${OUT:-/tmp}
cd .carry/prof
export LD_LIBRARY_PATH=$PWD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

timeout 90 ./tilejit_tests -tc='profiler cupti gpu*' -s >"$out/profiler_gpu.txt" 2>&1
echo "profiler cupti gpu tests: rc $?"
grep -E "TEST CASE|ERROR|graph counters|pc sampling counters|PC sampling|test cases" "$out/profiler_gpu.txt" | head -40

timeout 60 ./tilejit_tests -tc='profiler*' -tce='*plugin*' >"$out/profiler_all.txt" 2>&1
echo "profiler tests: rc $?"
tail -3 "$out/profiler_all.txt"

timeout 100 ./profiler_bench --benchmark_filter='BM_TinyLaunches|BM_GemmLoop/./50|BM_GemmLoop/./500' \
  >"$out/profiler_bench.txt" 2>&1
echo "profiler_bench: rc $?"
grep -E "^BM_" "$out/profiler_bench.txt"

timeout 90 ./profiler_bench --long-job=10000000 >"$out/profiler_long_job.txt" 2>&1
echo "long job: rc $?"
tail -2 "$out/profiler_long_job.txt"
