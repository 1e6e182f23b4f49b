#!/usr/bin/env bash
# GPU checks of the profiler (CUPTI attribution, CUDA graphs), run on the
# device machine from the repository root over a carried .carry/prof:
#   build here:  cmake -S . -B build/prof -DCMAKE_BUILD_TYPE=Release -DTILEJIT_WERROR=ON -DCMAKE_BUILD_RPATH='$ORIGIN'
#                cmake --build build/prof -j2 --target tilejit_tests
#                mkdir -p .carry/prof && cp build/prof/test/tilejit_tests .carry/prof/ &&
#                cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 /usr/lib/x86_64-linux-gnu/libxxhash.so.0 .carry/prof/ &&
#                strip .carry/prof/tilejit_tests
#   run there:   scripts/device_run_profiler.sh   (carry [".carry"])
set -uo pipefail
out=${OUT:-/tmp}
cd .carry/prof
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
./tilejit_tests -tc='profiler cupti gpu*' -s >"$out/profiler_gpu.txt" 2>&1
echo "profiler cupti gpu tests: rc $?"
grep -E "TEST CASE|ERROR|graph counters|test cases" "$out/profiler_gpu.txt"
# Every profiler test but the plugin ones (the plugin path is compiled in as a build-tree path).
./tilejit_tests -tc='profiler*' -tce='*plugin*' >"$out/profiler_all.txt" 2>&1
echo "profiler tests: rc $?"
tail -3 "$out/profiler_all.txt"
