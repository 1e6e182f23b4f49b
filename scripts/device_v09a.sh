#!/usr/bin/env bash
# v0.9, first call: P carried packed (two bf16 per register) across the FA3-order forward's back edge.
# GPU tests of the packed carry and every forward that traces fa3_keys (against f64 with poisoned outputs),
# synccheck / racecheck on the small persistent case, then the library forward of this build and of the previous
# commit (attention_bench_old) alternated twice, the exact / padded D = 96 rows, and torch SDPA in the same call.
# Carry tilejit_tests, attention_bench and attention_bench_old (built from def7889) with their libraries.
. "$(dirname "$0")/device_common.sh" "$@"
SAN=/usr/local/cuda/bin/compute-sanitizer
echo "== GPU tests"
timeout -k 5 240 "$B/tilejit_tests" -tc='packed_carry_gpu*,attention_tma*gpu*,attention_library_forward_gpu*,attention_persistent_gpu_matches*,attention_library_persistent_forward_gpu*' \
  > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -20
echo "== sanitizers (attention_persistent_gpu_small_for_the_sanitizers)"
timeout -k 5 40 "$SAN" --tool synccheck "$B/tilejit_tests" -tc='attention_persistent_gpu_small_for_the_sanitizers' > "$OUT/synccheck.txt" 2>&1; echo "synccheck rc $?"
grep -E "ERROR SUMMARY|test cases" "$OUT/synccheck.txt"
timeout -k 5 50 "$SAN" --tool racecheck --racecheck-report all "$B/tilejit_tests" -tc='attention_persistent_gpu_small_for_the_sanitizers' > "$OUT/racecheck.txt" 2>&1; echo "racecheck rc $?"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test cases" "$OUT/racecheck.txt"
F1='BM_AttnForward/|BM_FlashFwdPingPongEdge(Padded|Turns)?/D(64|96|128)/.*/128x(128/2|192)'
F2='BM_AttnForward/'
bench_rows old_1 "$B/attention_bench_old" "$F1"; bench_rows new_1 "$B/attention_bench" "$F1"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; tail -28 "$OUT/torch.txt"
bench_rows new_2 "$B/attention_bench" "$F2"; bench_rows old_2 "$B/attention_bench_old" "$F2"
