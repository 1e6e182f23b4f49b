#!/bin/bash
# v0.13, last call: every GPU test of the suite at this session's final code (device events, the fused TMA-store
# GEMM included; the plugin cases with the toy plugin carried), and the device events' cost once more.
source scripts/device_common.sh
gpu_tests '*gpu*'
grep -c "TEST CASE" "$OUT/tests.txt"
for i in 1 2; do bench_rows devev$i "$B/profiler_bench" "BM_DeviceEvents" > /dev/null; grep -o "instrumented_us.*" "$OUT/bench_devev$i.txt"; done
