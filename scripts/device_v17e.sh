#!/bin/bash
# v0.17 call 9: the wait for a deferred wgmma anchored after the row reductions (codegen anchor_wait) — the library
# forward's GPU tests, then old (attention_bench_old, the commit before) / new rows alternated, D 64 / 96 / 128.
source scripts/device_common.sh
gpu_tests 'attention_library_forward_gpu*,attention_library_persistent_forward_gpu*'
F='BM_AttnForward/D(64|96|128)/'
bench_rows old1 "$B/attention_bench_old" "$F"
bench_rows new1 "$B/attention_bench" "$F"
bench_rows old2 "$B/attention_bench_old" "$F"
bench_rows new2 "$B/attention_bench" "$F"
