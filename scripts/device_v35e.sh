#!/bin/bash
# v0.35: causal sections of at most 8 MiB with the best-balanced size kept — the persistent forward's GPU tests,
# the causal rows at the 700 W cap beside cuDNN (3 s each), and Nsight Compute's counts for D = 64 causal, ours
# and cuDNN's. Usage: scripts/device_v35e.sh [.carry]  (carry attention_bench and persist_tests)
source scripts/device_common.sh
echo "== GPU tests"
timeout -k 5 200 "$B/persist_tests" -tc='attention_persistent_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions" "$OUT/tests.txt" | head
for D in 64 96 128; do
  sustained "ours D$D causal" "^BM_AttnForward/D$D/causal/"
  timeout -k 5 60 python3 bench/sdpa_sustained.py $D causal 3 uniform
done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_write.sum,smsp__inst_executed_pipe_tensor_op_gmma.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg
ncu_counts lib_d64c FlashAttn $M "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D64/causal/' --benchmark_min_time=0.01
ncu_counts cudnn_d64c cudnn $M python3 bench/sdpa_sustained.py 64 causal 0.05 uniform
