#!/bin/bash
# v0.35: the memory traffic and instruction counts of the library's D = 128 forward and cuDNN's, one launch each
# under Nsight Compute (clocks not locked): where would ours spend more energy per product?
# Usage: scripts/device_v35b.sh [.carry]
source scripts/device_common.sh
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed_pipe_tensor_op_gmma.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,smsp__warps_issue_stalled_sleeping.sum
for C in full causal; do
  ncu_counts "lib_$C" FlashAttn $M "$B/attention_bench" --benchmark_filter="^BM_AttnForward/D128/$C/" --benchmark_min_time=0.01
  ncu_counts "cudnn_$C" cudnn $M python3 bench/sdpa_sustained.py 128 $C 0.05 uniform
done
