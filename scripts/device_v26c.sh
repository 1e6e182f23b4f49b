#!/bin/bash
# v0.26 call 4: the fused backward at D = 64 with eae8322's flash_bwd_tma.hpp (attention_bench_old) and this one's
# (one helper for the accumulator's layout, m0 passed to the sink), alternated; the fused backward's GPU cases at the
# final code; then the GPU suite from case $2 on ($3 seconds).
source scripts/device_common.sh
R='BM_AttnBackward(TwoPass|Fused)?/D64/full|BM_AttnBackwardFused/D128/full'
bench_rows old1 "$B/attention_bench_old" "$R"
bench_rows new1 "$B/attention_bench" "$R"
bench_rows old2 "$B/attention_bench_old" "$R"
bench_rows new2 "$B/attention_bench" "$R"
gpu_tests 'attention_bwd_tma_gpu*,attention_backward_library_gpu*,attention_library_decode_and_fused*,sm90_edge_warp_groups*'
cp "$OUT/tests.txt" "$OUT/tests_attention.txt"
timeout -k 5 ${3:-300} "$B/tilejit_tests" -tc='*gpu*' --first=${2:-45} -d > "$OUT/tests.txt" 2>&1; echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20; grep -E " s: " "$OUT/tests.txt" | tail -40
