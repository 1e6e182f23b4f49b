#!/usr/bin/env bash
# v0.28, first call: why D = 256 causal trails cuDNN more than full does. Nsight Compute on the library's D = 256
# forward (one program per item, FlashAttnFwdTmaPingPongEdge / EvenN, 128 x 64, 2 stages, producer warp group)
# full and causal, and on cuDNN's SDPA kernel at the same shapes; then the bench rows (library, both schedules)
# and torch in one call. Clocks left alone (--clock-control none). Carry attention_bench.
. "$(dirname "$0")/device_common.sh" "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
SECT="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
KEYS="Duration|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Registers Per|Executed Instructions  |Grid Size|Block Size|Waves Per|Dynamic Shared|Stall"
for M in causal full; do
  echo "== ours D256 $M"
  timeout -k 5 100 "$NCU" --clock-control none $SECT -k regex:FlashAttnFwdTma -c 1 \
    "$B/attention_bench" --benchmark_filter="BM_AttnForward/D256/$M" --benchmark_min_time=0.01 > "$OUT/ncu_ours_$M.txt" 2>&1
  echo "rc $?"; grep -E "$KEYS" "$OUT/ncu_ours_$M.txt" | head -16
  echo "== cuDNN D256 $M"
  timeout -k 5 100 "$NCU" --clock-control none $SECT -k 'regex:(?i)(sdpa|fmha|attn|cudnn)' --launch-skip 2 -c 1 \
    python3 scripts/ncu_sdpa.py 256 $M > "$OUT/ncu_cudnn_$M.txt" 2>&1
  echo "rc $?"; grep -E "$KEYS" "$OUT/ncu_cudnn_$M.txt" | head -16
done
bench_rows lib "$B/attention_bench" 'BM_AttnForward[a-z_]*/D256/'
