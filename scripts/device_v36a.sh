#!/bin/bash
# v0.36 call 1: the quad-transposed 16-bit store on the GPU (its tests, mma.sync included; the persistent forward and
# the backward at the new store code), its speed at the power cap against the previous store (attention_bench_old,
# alternated), and the D = 64 causal item shapes at the cap. Usage: scripts/device_v36a.sh [.carry]
# (carry rs_gpu: an -O1 test binary of test_quad_store.cpp and the attention / GEMM example tests; attention_bench,
# attention_bench_old)
source scripts/device_common.sh
t() {  # FILTER SECONDS TAG
  timeout -k 5 "$2" "$B/rs_gpu" -tc="$1" > "$OUT/t_$3.txt" 2>&1
  echo "$1: rc $? $(grep -E 'test cases' "$OUT/t_$3.txt" | tr -s ' ') $(grep -E 'assertions' "$OUT/t_$3.txt" | tr -s ' ')"
  grep -m3 -A3 ERROR "$OUT/t_$3.txt"
}
t 'quad_store_gpu*' 40 q
for r in 1 2; do
  sustained "old D128 full" '^BM_AttnForward/D128/full/' 2 attention_bench_old
  sustained "new D128 full" '^BM_AttnForward/D128/full/' 2 attention_bench
  sustained "old D256 causal" '^BM_AttnForward/D256/causal/' 2 attention_bench_old
  sustained "new D256 causal" '^BM_AttnForward/D256/causal/' 2 attention_bench
done
for r in 1 2; do
  sustained "D64 causal library (192x96)" '^BM_AttnForward/D64/causal/' 3
  sustained "D64 causal 128x128/2" '^BM_FlashFwdPersistent/D64/causal/128x128/2/' 3
  sustained "D64 causal 192x128/2" '^BM_FlashFwdPersistent/D64/causal/192x128/2/' 3
done
t 'attention_library_persistent_forward_gpu_matches_f64' 100 p
t 'attention_backward_library_gpu_matches_f64' 120 b
