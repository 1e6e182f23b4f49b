#!/usr/bin/env bash
# v0.34, last call: where the forward's consumer warps stall, per SASS instruction. Nsight Compute's source counters
# (warp-state sampling per instruction) on the library's D = 128 forward, full and causal (one program per item,
# 128 x 128, 2 stages, producer warp group), exported as CSV of the SASS page for reading off the device.
# Clocks left alone (--clock-control none). Carry attention_bench.
. "$(dirname "$0")/device_common.sh" "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"; "$NCU" --version | tail -1
for M in full causal; do
  echo "== ours D128 $M"
  timeout -k 5 150 "$NCU" --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --import-source no -k regex:FlashAttnFwdTma --launch-skip 2 -c 1 -o "$OUT/d128_$M" -f \
    "$B/attention_bench" --benchmark_filter="BM_AttnForward/D128/$M" --benchmark_min_time=0.01 > "$OUT/ncu_run_$M.txt" 2>&1
  echo "rc $?"; tail -3 "$OUT/ncu_run_$M.txt"
  "$NCU" -i "$OUT/d128_$M.ncu-rep" --page details > "$OUT/details_$M.txt" 2>&1
  grep -E "Duration|Issue Slots|Warp Cycles Per Issued|Stall|Eligible|Executed Ipc" "$OUT/details_$M.txt" | head -20
  "$NCU" -i "$OUT/d128_$M.ncu-rep" --page source --print-source sass --csv > "$OUT/sass_$M.csv" 2>&1
  echo "sass rc $? lines $(wc -l < "$OUT/sass_$M.csv")"; head -c 600 "$OUT/sass_$M.csv"; echo
  rm -f "$OUT/d128_$M.ncu-rep"
done
