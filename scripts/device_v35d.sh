#!/bin/bash
# v0.35: the library forward against cuDNN at the 700 W cap — every head dim and mask, 3 s a row each, alternated
# (ours with causal sections of 32 and 8 MiB: TJ_EXP_SECTION_MIB, a switch of that call's experiment build, read by no commit) — and Nsight Compute's memory traffic of both
# at D = 256 causal. Usage: scripts/device_v35d.sh [.carry]
source scripts/device_common.sh
for D in 64 96 128 256; do
  for C in full causal; do
    sustained "ours D$D $C" "^BM_AttnForward/D$D/$C/"
    [ $C = causal ] && [ $D != 256 ] && TJ_EXP_SECTION_MIB=8 sustained "ours D$D $C sec8" "^BM_AttnForward/D$D/$C/"
    timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform
  done
done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
ncu_counts lib_d256c FlashAttn $M "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D256/causal/' --benchmark_min_time=0.01
ncu_counts cudnn_d256c cudnn $M python3 bench/sdpa_sustained.py 256 causal 0.05 uniform
