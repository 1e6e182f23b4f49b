#!/usr/bin/env bash
# One call on the lent GPU machine: tests, demo (cold then warm cache), benchmarks.
# Expects the Release binaries and their shared libraries in .carry/ (see docs/perf.md).
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
rm -rf "$TILEJIT_CACHE_DIR"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
echo "== tests"; "$B/tilejit_tests" 2>&1 | tee "$OUT/tests.txt" | tail -25
echo "== demo (cold cache)"; "$B/tilejit" demo 2>&1 | tee "$OUT/demo_cold.txt"
echo "== demo (warm cache)"; "$B/tilejit" demo 2>&1 | tee "$OUT/demo_warm.txt"
echo "== examples"; "$B/example_vector_add"; "$B/example_softmax"
echo "== bench"; "$B/rowwise_bench" --benchmark_min_time=0.5 --benchmark_out="$OUT/bench.json" --benchmark_out_format=json 2>&1 | tee "$OUT/bench.txt"
echo "== compute-sanitizer (memcheck, racecheck) on the GPU tests"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$CS" --tool memcheck --error-exitcode 9 "$B/tilejit_tests" -tc='gpu_*' 2>&1 | tee "$OUT/memcheck.txt" | tail -4
"$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gpu_all_ops*,gpu_softmax*' 2>&1 | tee "$OUT/racecheck.txt" | tail -4
