#!/bin/bash
# v0.22 call 4: the first GPU run of scans and reductions of several tiles together (tj::associative_scan /
# tj::reduce on a std::tuple), the one-operand custom ones again (copied-in literals), and compute-sanitizer
# racecheck / memcheck on the tuple case (its warp steps stage structs through shared memory).
source scripts/device_common.sh
gpu_tests 'tuple_scan_gpu*,associative_scan_gpu*,scans_gpu*,argmax*gpu*'
grep " s: " "$OUT/tests.txt"
echo "== racecheck / memcheck (tuple scans and reductions)"
sanitize racecheck 'tuple_scan_gpu*' 200
sanitize memcheck 'tuple_scan_gpu*' 150
