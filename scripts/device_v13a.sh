#!/bin/bash
# v0.13 call 1: device events — the GPU tests (ChunkSum on CUDA, warp-specialised rung 5), the instrumented GEMM's
# cost and what its events measured; compute-sanitizer memcheck on the device-event test; the tiny-launch ratio.
source scripts/device_common.sh
gpu_tests '*device_event*'
grep -E "MESSAGE|smallest" "$OUT/tests.txt" | head
echo "== memcheck, device events"
timeout -k 5 200 compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='device_events_gpu*' > "$OUT/memcheck.txt" 2>&1; echo "rc $?"
grep -E "ERROR SUMMARY|test cases" "$OUT/memcheck.txt"
bench_rows devev "$B/profiler_bench" "BM_DeviceEvents"
bench_rows devev2 "$B/profiler_bench" "BM_DeviceEvents"

