#!/bin/bash
# v0.35: the library forward against cuDNN at the 700 W cap — every head dim and mask, 3 s a row each, alternated
# (ours with causal sections of 32 and 8 MiB: TJ_EXP_SECTION_MIB) — and Nsight Compute's memory traffic of both
# at D = 256 causal. Usage: scripts/device_v35d.sh [.carry]
source scripts/device_common.sh
sus() {  # NAME FILTER: 3 s of the row, its mean
  echo "$1 $(timeout -k 5 60 "$B/attention_bench" --benchmark_filter="$2" --benchmark_min_time=3 2>&1 | grep -o 'TFLOP/s=[0-9.]*')"
}
for D in 64 96 128 256; do
  for C in full causal; do
    sus "ours D$D $C" "^BM_AttnForward/D$D/$C/"
    [ $C = causal ] && [ $D != 256 ] && TJ_EXP_SECTION_MIB=8 sus "ours D$D $C sec8" "^BM_AttnForward/D$D/$C/"
    timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform
  done
done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
timeout -k 5 120 ncu --clock-control none --kernel-name regex:FlashAttn --launch-skip 2 --launch-count 1 --metrics $M --csv \
  "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D256/causal/' --benchmark_min_time=0.01 > "$OUT/ncu_lib_d256c.csv" 2>&1
timeout -k 5 120 ncu --clock-control none --kernel-name regex:cudnn --launch-skip 2 --launch-count 1 --metrics $M --csv \
  python3 bench/sdpa_sustained.py 256 causal 0.05 uniform > "$OUT/ncu_cudnn_d256c.csv" 2>&1
for w in lib cudnn; do
  echo "== ncu $w D256 causal: $(grep '^"' "$OUT/ncu_${w}_d256c.csv" | awk -F'","' 'NR>1 {printf "%s=%s ", $(NF-2), $NF}' | tr -d '"' | sed 's/__/_/g')"
  grep '^"' "$OUT/ncu_${w}_d256c.csv" | sed -n 2p | cut -d, -f5,8,9
done
