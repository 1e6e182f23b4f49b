#!/usr/bin/env bash
# Nsight Compute on the bf16 GEMM at 8192³: rung 6 storing C by TMA (128x256, 4 stages: the library's usual
# winner) beside cuBLAS writing bf16, the same sections as scripts/device_v09b.sh. Carry gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
PD=""; "$NCU" --help 2>/dev/null | grep -q -- "--print-details" && PD="--print-details all"
SECT="$PD --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
for w in ours cublas; do
  f='BM_TilejitV6Store/128x256/4/8192/8192/8192'; k='regex:Matmul'
  [ $w = cublas ] && f='BM_CublasTNBf16Out/8192/8192/8192' && k='regex:(?i)(gemm|sm90|cutlass|xmma)'
  timeout -k 5 100 "$NCU" --clock-control none $SECT -k "$k" -c 1 "$B/gemm_bench" --benchmark_filter="$f" --benchmark_min_time=0.01 > "$OUT/ncu_gemm_$w.txt" 2>&1
  echo "$w rc $?"; grep -E "^\s+\S.*\(.*\)x\(|Duration|Pipe Tensor Cycles Active|Issue Slots Busy|Executed Instructions  " "$OUT/ncu_gemm_$w.txt" | head -8
done
