#!/bin/bash
# v0.21 call 3: why the mma.sync GEMM (rung 5 compiled for sm_90, what an A100 runs) reaches 0.42x cuBLAS: its SASS
# (a cubin compiled on the dev box, carried), bench rows beside cuBLAS, and Nsight Compute's warp-state, instruction
# and shared-memory sections on 128x256/3 at 4096^3.
source scripts/device_common.sh
cuobjdump -sass "$B/mma128x256.cubin" > "$OUT/mma128x256.sass" 2>&1; echo "sass rc $? lines $(wc -l < "$OUT/mma128x256.sass")"
for i in HMMA LDSM LDGSTS BAR LDGDEPBAR DEPBAR STL LDL IMAD ISETP; do printf "%s %s  " $i "$(grep -c "$i" "$OUT/mma128x256.sass")"; done; echo
bench_rows mma "$B/gemm_bench" 'BM_(CublasTN<>|TilejitMmaSync/(128x256/3|128x128/3|256x128/3))/4096/4096/4096'
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SECT="--print-details all --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables"
timeout -k 5 150 "$NCU" --clock-control none $SECT -k regex:Matmul -c 1 "$B/gemm_bench" --benchmark_filter='BM_TilejitMmaSync/128x256/3/4096/4096/4096' --benchmark_min_time=0.01 > "$OUT/ncu_mma.txt" 2>&1
echo "ncu rc $?"; grep -E "Duration|Pipe Tensor|Issue Slots Busy|Executed Instructions  |Stall|Registers Per|Bank Conflicts|No Eligible|Eligible Warps|Active Warps" "$OUT/ncu_mma.txt" | head -40
