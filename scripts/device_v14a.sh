#!/bin/bash
# v0.14 call 1: the device-event GPU tests and cost at 86df5a2 (the prelude refactor), then the profiler's GPU cases.
source scripts/device_common.sh
gpu_tests '*device_event*'
cp "$OUT/tests.txt" "$OUT/tests_events.txt"
bench_rows events .carry/profiler_bench 'BM_DeviceEvents'
gpu_tests '*profiler*gpu*'
