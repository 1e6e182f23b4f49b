#!/bin/bash
# v0.28 call 4: which of call 3's changes costs D = 64 / 96 (full). One experiment binary (attention_bench_exp: the
# final code plus two temporary environment switches, never committed: TJX_LOOP_PLAIN=1 emits every loop with a plain
# 32-bit `s += step`, TJX_NO_THRESHOLD=1 raises the running max at every new maximum) against 406473f, two rounds.
source scripts/device_common.sh
R='BM_AttnForward/D(64|96|128)/'
for round in 1 2; do
  bench_rows old$round "$B/attention_bench_old" "$R"
  bench_rows fin$round "$B/attention_bench_exp" "$R"
  TJX_LOOP_PLAIN=1 bench_rows noloop$round "$B/attention_bench_exp" "$R"
  TJX_NO_THRESHOLD=1 bench_rows nothr$round "$B/attention_bench_exp" "$R"
  TJX_LOOP_PLAIN=1 TJX_NO_THRESHOLD=1 bench_rows neither$round "$B/attention_bench_exp" "$R"
done
