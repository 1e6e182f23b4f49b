#!/usr/bin/env bash
# v0.10, first call: the persistent forward's schedule table (FwdItemTable: equal causal sections, greedy
# least-loaded assignment, read by the producer warp group too). GPU tests of the persistent forward, the library
# forward, the block-sparse producer loads and the review's pending e4m3 case; then the persistent rows of the
# previous commit (attention_bench_old: round robin) and of this one, alternated, with torch SDPA between.
# Carry tilejit_tests, attention_bench, attention_bench_old and their libraries.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='attention_persistent_gpu*,producer_loads*gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,packed_zero_resident_edges_gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
ROWS='BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward(per_item)?/'
bench_rows old1 "$B/attention_bench_old" 'BM_FlashFwdPersistent/D(64|96|128)/|BM_AttnForwardper_item/'
bench_rows new1 "$B/attention_bench" "$ROWS"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows old2 "$B/attention_bench_old" 'BM_FlashFwdPersistent/D(64|96|128)/'
bench_rows new2 "$B/attention_bench" "$ROWS"
