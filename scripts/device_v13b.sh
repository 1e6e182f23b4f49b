#!/bin/bash
# v0.13 call 3: device events with wgmma pairs — the GPU tests, the GEMM GPU tests (the wgmma waits now come from one
# helper), BM_DeviceEvents twice.
source scripts/device_common.sh
gpu_tests '*device_event*,gemm_v5*gpu*,gemm_v6*gpu*'
grep -E "smallest" "$OUT/tests.txt" | head
bench_rows devev "$B/profiler_bench" "BM_DeviceEvents"
bench_rows devev2 "$B/profiler_bench" "BM_DeviceEvents"
