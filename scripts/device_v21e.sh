#!/bin/bash
# v0.21 call 6: Nsight Compute on the mma.sync GEMM after the interior fast path (128x256/3 at 4096^3): tensor
# pipe, stalls, shared-memory wavefronts, and the SASS lines with the most stall samples.
source scripts/device_common.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SECT="--print-details all --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables --section SourceCounters"
timeout -k 5 150 "$NCU" --clock-control none $SECT -k regex:Matmul -c 1 "$B/gemm_bench" --benchmark_filter='BM_TilejitMmaSync/128x256/3/4096/4096/4096' --benchmark_min_time=0.01 > "$OUT/ncu_mma2.txt" 2>&1
echo "ncu rc $?"; grep -E "Duration|Pipe Tensor Cycles|Issue Slots Busy|Executed Instructions  |Stall (Wait|Math|Short|Long|Barrier|No Inst|Not Sel|Branch|MIO|LG)|Eligible Warps|Shared.*(Bank|Wavefront)|L1.*Conflict" "$OUT/ncu_mma2.txt" | head -40
