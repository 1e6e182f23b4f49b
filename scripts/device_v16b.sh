#!/bin/bash
# v0.16 call 2: every GPU test with narrow slabs in the code generator (plugin cases with the toy plugin carried),
# then memcheck and racecheck on the narrow-slab GPU case.
source scripts/device_common.sh
gpu_tests '*gpu*'
echo "== memcheck / racecheck (narrow slabs)"
sanitize memcheck 'sm90_edge_narrow_slabs_gpu*' 50
sanitize racecheck 'sm90_edge_narrow_slabs_gpu*' 50
