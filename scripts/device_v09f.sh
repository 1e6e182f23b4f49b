#!/usr/bin/env bash
# v0.9, sixth call: the final state (P packed, zero accumulators, Q waited once, FwdSchedule::automatic). The
# library forward's GPU tests (automatic, per_item, persistent), then the library rows — automatic (the default),
# per_item and persistent — twice, with torch SDPA (flash, cuDNN) between the rounds. Carry tilejit_tests and
# attention_bench with their libraries.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 150 "$B/tilejit_tests" -tc='attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,packed_carry_gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
bench_rows 1 "$B/attention_bench" 'BM_AttnForward'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
bench_rows 2 "$B/attention_bench" 'BM_AttnForward/'
