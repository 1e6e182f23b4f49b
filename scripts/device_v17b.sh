#!/bin/bash
# v0.17 call 2: the persistent forward with 192-row items (three consumer warp groups) and 96-key blocks, which
# ptxas compiles without spills, beside the library's 128 x 128 rows, two rounds; then the tiny-launch overhead
# pinned to one CPU (taskset) with CUPTI's knobs 0 (default), 2 (kind=serial) and its two halves (9: kernel records
# only, 10: launch callbacks only), and BM_TinyLaunchesPaired pinned to another CPU.
source scripts/device_common.sh
F='BM_FlashFwdPersistent/D64/(full|causal)/(128x128/2|192x96/2)|BM_FlashFwdPersistent/D96/(full|causal)/(128x128/2|192x96/3)|BM_FlashFwdPersistent/D96/causal/128x128/3|BM_FlashFwdPersistentEvenN/D96/full/128x128/3'
bench_rows att1 "$B/attention_bench" "$F"
bench_rows att2 "$B/attention_bench" "$F"
echo "== profiler pinned to CPU 5"
timeout -k 5 200 taskset -c 5 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired|BM_CuptiKnobs/(0|2|9|10)/' > "$OUT/prof_knobs.txt" 2>&1; echo "rc $?"
grep -E "^BM_|rror" "$OUT/prof_knobs.txt" | sed 's/ \+/ /g' | cut -c1-300
echo "== profiler pinned to CPU 9"
timeout -k 5 100 taskset -c 9 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired' > "$OUT/prof_9.txt" 2>&1; echo "rc $?"
grep -E "^BM_|rror" "$OUT/prof_9.txt" | sed 's/ \+/ /g' | cut -c1-300
