#!/bin/bash
# v0.35: two schedule changes aimed at the forward's memory traffic, measured by Nsight Compute (DRAM and L2 bytes)
# and sustained (4 s a row, alternated, at the 700 W cap): causal sections of 16 or 8 MiB of K and V instead of 32
# (TJ_EXP_SECTION_MIB), and full attention's K and V through rank-2 descriptors (TJ_EXP_KV_RANK2). Temporary
# environment switches of this experiment's build. Usage: scripts/device_v35c.sh [.carry]
source scripts/device_common.sh
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
ncu_row() {  # NAME FILTER (environment passed through)
  timeout -k 5 120 ncu --clock-control none --kernel-name regex:FlashAttn --launch-skip 2 --launch-count 1 --metrics $M --csv \
    "$B/attention_bench" --benchmark_filter="$2" --benchmark_min_time=0.01 > "$OUT/ncu_$1.csv" 2>&1
  echo "== ncu $1: $(grep '^"' "$OUT/ncu_$1.csv" | awk -F'","' 'NR>1 {printf "%s=%s ", $(NF-2), $NF}' | tr -d '"' | sed 's/__/_/g')"
}
ncu_row full_r3 '^BM_AttnForward/D128/full/'
TJ_EXP_KV_RANK2=1 ncu_row full_r2 '^BM_AttnForward/D128/full/'
for sec in 32 16 8; do TJ_EXP_SECTION_MIB=$sec ncu_row causal_s$sec '^BM_AttnForward/D128/causal/'; done
sus() {  # NAME FILTER: 4 s of the row, its mean
  echo "$1 $(timeout -k 5 60 "$B/attention_bench" --benchmark_filter="$2" --benchmark_min_time=4 2>&1 | grep -o 'TFLOP/s=[0-9.]*')"
}
echo "== sustained, 4 s each"
for r in 1 2; do
  sus full_r3 '^BM_AttnForward/D128/full/'
  TJ_EXP_KV_RANK2=1 sus full_r2 '^BM_AttnForward/D128/full/'
  for sec in 32 16 8; do TJ_EXP_SECTION_MIB=$sec sus causal_s$sec '^BM_AttnForward/D128/causal/'; done
done
timeout -k 5 60 python3 bench/sdpa_sustained.py 128 full 4 uniform
timeout -k 5 60 python3 bench/sdpa_sustained.py 128 causal 4 uniform
