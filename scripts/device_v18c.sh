#!/bin/bash
# v0.18 call 4: after exact integer literals (ops.hpp literal_constant), shuffle overloads for u32 / u64 / i64 / f64
# reductions and the induction-variable check: every GPU test (the new reduce_dtypes_gpu case among them), from
# case FIRST on (default 1) — a cold kernel cache may need two calls.
source scripts/device_common.sh
echo "== GPU tests from case ${2:-1}"
timeout -k 5 530 "$B/tilejit_tests" -tc="reduce_dtypes_gpu*,*gpu*" --first="${2:-1}" > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30
grep -c "TEST CASE" "$OUT/tests.txt"
