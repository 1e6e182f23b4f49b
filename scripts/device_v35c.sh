#!/bin/bash
# v0.35: two schedule changes aimed at the forward's memory traffic, measured by Nsight Compute (DRAM and L2 bytes)
# and sustained (4 s a row, alternated, at the 700 W cap): causal sections of 16 or 8 MiB of K and V instead of 32
# (TJ_EXP_SECTION_MIB), and full attention's K and V through rank-2 descriptors (TJ_EXP_KV_RANK2). Temporary
# environment switches of this experiment's build. Usage: scripts/device_v35c.sh [.carry]
source scripts/device_common.sh
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
ncu_counts full_r3 FlashAttn $M "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D128/full/' --benchmark_min_time=0.01
TJ_EXP_KV_RANK2=1 ncu_counts full_r2 FlashAttn $M "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D128/full/' --benchmark_min_time=0.01
for sec in 32 16 8; do
  TJ_EXP_SECTION_MIB=$sec ncu_counts causal_s$sec FlashAttn $M "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D128/causal/' --benchmark_min_time=0.01
done
echo "== sustained, 4 s each"
for r in 1 2; do
  sustained full_r3 '^BM_AttnForward/D128/full/' 4
  TJ_EXP_KV_RANK2=1 sustained full_r2 '^BM_AttnForward/D128/full/' 4
  for sec in 32 16 8; do TJ_EXP_SECTION_MIB=$sec sustained causal_s$sec '^BM_AttnForward/D128/causal/' 4; done
done
timeout -k 5 60 python3 bench/sdpa_sustained.py 128 full 4 uniform
timeout -k 5 60 python3 bench/sdpa_sustained.py 128 causal 4 uniform
