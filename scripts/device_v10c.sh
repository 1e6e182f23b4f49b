#!/usr/bin/env bash
# v0.10, third call: full attention's persistent programs back on the computed round robin (no table loads); the
# automatic schedule now persistent for every causal shape. GPU tests of the persistent forward and the library
# forward (every schedule); then the previous commit's library rows (attention_bench_old) and this one's,
# alternated, with torch SDPA between, and the exact-96 / padded-128 pairs.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='attention_persistent_gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
OLD='BM_FlashFwdPersistent/D(64|128)/full|BM_AttnForward/'
NEW='BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward/|BM_FlashFwdPingPongEdge(Padded)?/D96/'
bench_rows old1 "$B/attention_bench_old" "$OLD"
bench_rows new1 "$B/attention_bench" "$NEW"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows old2 "$B/attention_bench_old" "$OLD"
bench_rows new2 "$B/attention_bench" "$NEW"
