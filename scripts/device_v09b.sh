#!/usr/bin/env bash
# v0.9, second call: Nsight Compute on the library forward (FlashAttnFwdTmaPingPongEdge, 128x128, 2 stages,
# producer warp group) and on cuDNN's SDPA kernel, D = 64 and 128 full, B=4 H=32 S=4096 bf16: the same sections
# side by side (throughput, warp states, instruction mix), to find what our kernel does more of. Clocks left
# alone (--clock-control none, device METHOD.md). Carry tilejit_tests and attention_bench.
. "$(dirname "$0")/device_common.sh" "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
echo "== packed carry GPU test (sm_90a only now)"
timeout -k 5 60 "$B/tilejit_tests" -tc='packed_carry_gpu*' 2>&1 | grep -E "ERROR|test cases|assertions"
PD=""; "$NCU" --help 2>/dev/null | grep -q -- "--print-details" && PD="--print-details all"
SECT="$PD --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
for D in 128 64; do
  echo "== ours D$D full"
  timeout -k 5 120 "$NCU" --clock-control none $SECT -k regex:FlashAttnFwdTma -c 1 \
    "$B/attention_bench" --benchmark_filter="BM_AttnForward/D$D/full" --benchmark_min_time=0.01 > "$OUT/ncu_ours_d$D.txt" 2>&1
  echo "rc $?"; grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Registers Per|Executed Instructions  " "$OUT/ncu_ours_d$D.txt" | head -12
  echo "== cuDNN D$D full"
  timeout -k 5 120 "$NCU" --clock-control none $SECT -k 'regex:(?i)(sdpa|fmha|attn|cudnn)' --launch-skip 2 -c 1 \
    python3 scripts/ncu_sdpa.py $D full > "$OUT/ncu_cudnn_d$D.txt" 2>&1
  echo "rc $?"; grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Registers Per|Executed Instructions  " "$OUT/ncu_cudnn_d$D.txt" | head -12
done
