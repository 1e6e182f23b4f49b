#!/bin/bash
# v0.35: 16-bit stores from mma / wgmma accumulators transposed within each quad (16-byte vectors): GPU tests of the
# stores and of the forward / backward that use them, then the forward at the power cap, before (attention_bench_old)
# and after, alternated. Usage: scripts/device_v35g.sh [.carry]  (carry rs_gpu: a test binary of test_quad_store.cpp
# and the attention / GEMM example tests; attention_bench and attention_bench_old)
source scripts/device_common.sh
t() {  # FILTER SECONDS TAG
  timeout -k 5 "$2" "$B/rs_gpu" -tc="$1" > "$OUT/t_$3.txt" 2>&1
  echo "$1: rc $? $(grep -E 'test cases' "$OUT/t_$3.txt" | tr -s ' ') $(grep -E 'assertions' "$OUT/t_$3.txt" | tr -s ' ')"
  grep -m3 -A3 ERROR "$OUT/t_$3.txt"
}
t 'quad_store_gpu*' 30 q
for r in 1 2; do
  sustained "old D128 full" '^BM_AttnForward/D128/full/' 2 attention_bench_old
  sustained "new D128 full" '^BM_AttnForward/D128/full/' 2 attention_bench
  sustained "old D256 causal" '^BM_AttnForward/D256/causal/' 2 attention_bench_old
  sustained "new D256 causal" '^BM_AttnForward/D256/causal/' 2 attention_bench
done
# (An -O1 test binary: the library forward's case needs more than 60 s; its first 60 s passed 7,253,065 assertions.)
t 'attention_library_forward_gpu_matches_f64' 200 f
t 'attention_library_persistent_forward_gpu_matches_f64' 100 p
t 'attention_backward_library_gpu_matches_f64' 100 b
