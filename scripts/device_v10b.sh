#!/usr/bin/env bash
# v0.10, second call: the schedule table's entry loaded one item ahead (a scalar the item loop carries, which the
# producer warp group now repeats). GPU tests of the persistent forward (kernel and library, one object across
# shapes), block-sparse producer loads; then the previous commit's rows (attention_bench_old: round robin) and this
# one's, alternated, with torch SDPA between. Carry tilejit_tests, attention_bench, attention_bench_old, libraries.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='attention_persistent_gpu*,producer_loads*gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
OLD='BM_FlashFwdPersistent/D(64|96|128)/|BM_AttnForward/'
NEW='BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward(per_item)?/'
bench_rows old1 "$B/attention_bench_old" "$OLD"
bench_rows new1 "$B/attention_bench" "$NEW"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows old2 "$B/attention_bench_old" "$OLD"
bench_rows new2 "$B/attention_bench" 'BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward/'
