#!/bin/bash
# v0.32 call 2: after the join family's vector width (DequantInt4's pair in one thread) — the reshape GPU cases again,
# then BM_Copy, BM_ReshapeCopy/* and BM_DequantInt4 in two rounds (the first call's relabel row was 15% below plain
# although the generated stores are the same 16-byte vectors: is it the round?).
# Usage: scripts/device_v32b.sh [.carry]
source scripts/device_common.sh
echo "== reshape / join / split / dequant GPU cases"
timeout -k 5 200 "$B/reshape_tests" -tc='*gpu*' -d > "$OUT/tests_reshape.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests_reshape.txt" | head -20
for r in 1 2 3; do
  ROW_LIMIT=100 bench_rows "reshape$r" "$B/rowwise_bench" 'BM_Copy|BM_ReshapeCopy|BM_DequantInt4'
done
echo "== memcheck"
timeout -k 5 160 compute-sanitizer --tool memcheck "$B/reshape_tests" -tc='dequant*gpu*' > "$OUT/memcheck.txt" 2>&1; echo "rc $?"
tail -2 "$OUT/memcheck.txt"
