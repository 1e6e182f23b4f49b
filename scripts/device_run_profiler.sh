#!/usr/bin/env bash
# The profiler on the H200, one device call (about 3 minutes; the timeouts add
# up to 5): the fixes of 2026-11-30 for the four problems of the session-3 run
# (/work/notes/device_results_session3.txt):
#   1. PC sampling read no sample       -> the GPU tests, with every PC-sampling read traced
#   2. long-job RSS grew 35% early      -> --long-job, RSS every 100 phases
#   3. flushing every 100 steps cost 9x -> BM_TinyLaunches/2 (and how often advance_phase waited)
#   4. tiny-launch overhead 1.43x       -> BM_TinyLaunches/1,3,4,5 and BM_CuptiParts (where CUPTI's cost goes)
#
# Build here first (Release; rpath $ORIGIN so the carried libraries are found):
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN'
#   cmake --build build-rel -j2 --target tilejit_tests profiler_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/profiler_bench .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/tilejit_tests .carry/profiler_bench
# then run this script on the device with carry [".carry"]. Logs go to $OUT.
. "$(dirname "$0")/device_common.sh" "$@"

echo "== 1. profiler GPU tests (attribution, CUPTI held elsewhere, graph, PC sampling), PC-sampling reads traced"
TILEJIT_PC_SAMPLING_TRACE=1 timeout 70 "$B/tilejit_tests" -tc='profiler cupti gpu*' -s > "$OUT/profiler_gpu.txt" 2>&1
echo "rc $?"
grep -E "TEST CASE|ERROR|libcupti:|pc sampling counters|sampling intervals|locations,|cupti: [0-9]|PC sampling|pc read|test cases|assertions" \
  "$OUT/profiler_gpu.txt" | cut -c1-400 | head -60

echo "== the profiler's CPU tests on this machine (plugin tests excluded: build-tree paths)"
timeout 20 "$B/tilejit_tests" -tc='profiler*' -tce='*plugin*,profiler cupti gpu*' > "$OUT/profiler_cpu.txt" 2>&1
echo "rc $?"; tail -3 "$OUT/profiler_cpu.txt"

echo "== 3 + 4. tiny launches: /0 none, /1 cupti+hook, /2 +flush every 100, /3 hook, /4 cupti, /5 none after CUPTI"
timeout 70 "$B/profiler_bench" --benchmark_filter=BM_TinyLaunches > "$OUT/tiny_launches.txt" 2>&1
echo "rc $?"; grep -E "^BM_|rror" "$OUT/tiny_launches.txt"
echo "== 4. where CUPTI's cost per launch goes: /1 callbacks only, /2 kernel records only, /3 both"
timeout 40 "$B/profiler_bench" --benchmark_filter=BM_CuptiParts > "$OUT/cupti_parts.txt" 2>&1
echo "rc $?"; grep -E "^BM_|rror" "$OUT/cupti_parts.txt"

echo "== 2. long job: 10M tiny launches, a phase every 10K, periodic flushing (RSS every 100 phases)"
TILEJIT_LONG_JOB_TRACE=1 timeout 100 "$B/profiler_bench" --long-job=10000000 > "$OUT/long_job.txt" 2>&1
echo "rc $?"; cat "$OUT/long_job.txt" | cut -c1-600
