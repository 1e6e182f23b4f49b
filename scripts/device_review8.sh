#!/usr/bin/env bash
# review 8: the GPU case of the store-packing fixes (16-bit integer vector stores, masked and TMA-staged; a TMA store
# of cast<int32>(float)), then the GEMM store GPU tests again on the fixed codegen. Carry tilejit_tests.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== store packing"
timeout -k 5 60 "$B/tilejit_tests" -tc='store_packing_gpu*' > "$OUT/packing.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/packing.txt" | head -10
echo "== GEMM store tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='gemm_store_race_gpu*,gemm_v6_store_gpu*' > "$OUT/gemm.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/gemm.txt" | head -10
