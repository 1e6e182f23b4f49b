#!/bin/bash
# v0.34 call 3: an upper bound for taking the row sum off the vector pipes. attention_bench_old is this commit's
# bench; attention_bench is a probe build of it whose fa3_step returns `l_i * alpha + 1.0f` in place of
# `l_i * alpha + tj::sum<1>(prob)` (a one-line change, not kept: its l is wrong), alternated in two rounds.
# Usage: scripts/device_v34c.sh [.carry]
source scripts/device_common.sh
F='BM_AttnForward/D(64|96|128|256)/'
bench_rows old1 "$B/attention_bench_old" "$F"
bench_rows new1 "$B/attention_bench" "$F"
bench_rows old2 "$B/attention_bench_old" "$F"
bench_rows new2 "$B/attention_bench" "$F"
