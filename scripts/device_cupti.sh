#!/usr/bin/env bash
# CUPTI's per-kernel cost on the H200, one device call (about 2-3 minutes; the timeouts add up to 3 min 50 s):
# issue 6 (100K tiny launches profiled < 1.3x unprofiled; measured 1.39x median) and what each CUPTI knob does
# to it (docs/profiler.md, "Overhead"):
#   1. the profiler's GPU tests, with "every kernel record arrives, attributed, under each cupti: knob"
#      (prints, per knob, what CUPTI took or refused: hw_trace is expected to be refused on Hopper)
#   2. the profiler's CPU tests on this machine (plugin tests excluded: build-tree paths)
#   3. BM_TinyLaunchesPaired: 9 paired rounds, the issue's number
#   4. BM_CuptiKnobs/0..8: 5 paired rounds per knob setting (kind=serial, warm-up launch, per_thread=off,
#      pinned=on, device_buffer=32M, flush_period=10, 4 MiB tilejit buffers), with drain_ms (the final
#      synchronize: us = the loop is the launching thread's, ms = launches queued, the loop waited for the GPU)
#      and whether every record arrived under its scope (attributed = 1)
#
# Build here first (Release; rpath $ORIGIN so the carried libraries are found):
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN' -DTILEJIT_WERROR=ON
#   cmake --build build-rel -j2 --target tilejit_tests profiler_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/profiler_bench .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/tilejit_tests .carry/profiler_bench
# then run this script on the device with carry [".carry"]:  bash scripts/device_cupti.sh
# Logs go to $OUT (profiler_gpu.txt, profiler_cpu.txt, paired.txt, knobs.txt).
. "$(dirname "$0")/device_common.sh" "$@"

echo "== 1. profiler GPU tests (attribution, each cupti: knob, CUPTI held elsewhere, graph, PC sampling)"
timeout 60 "$B/tilejit_tests" -tc='profiler cupti gpu*' -s > "$OUT/profiler_gpu.txt" 2>&1
echo "rc $?"
grep -E "ERROR|FAILED|MESSAGE: .*kernel kind|refused the mode knob|test cases|assertions" \
  "$OUT/profiler_gpu.txt" | cut -c1-400 | head -40

echo "== 2. profiler CPU tests"
timeout 20 "$B/tilejit_tests" -tc='profiler*' -tce='*plugin*,profiler cupti gpu*' > "$OUT/profiler_cpu.txt" 2>&1
echo "rc $?"; tail -3 "$OUT/profiler_cpu.txt"

echo "== 3. tiny launches, 9 paired rounds (issue 6 target: ratio_median < 1.3; 2026-11-29: 1.39, min 1.17, max 1.73)"
timeout 40 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired' > "$OUT/paired.txt" 2>&1
echo "rc $?"; grep -E "^BM_|rror" "$OUT/paired.txt"

echo "== 4. CUPTI knobs, 5 paired rounds each (/0 is the default again: compare the others with it)"
timeout 110 "$B/profiler_bench" --benchmark_filter='BM_CuptiKnobs' > "$OUT/knobs.txt" 2>&1
echo "rc $?"; grep -E "^BM_|rror" "$OUT/knobs.txt"
grep -E "^\[knob" "$OUT/knobs.txt" \
  | sed -E 's/cupti: [0-9]+ records.*(kernel kind [A-Z_a-z]+);.*(per-thread buffers: [a-z ]+);.*detached [0-9]+ time\(s\)/\1; \2/' | cut -c1-300
