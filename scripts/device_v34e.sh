#!/usr/bin/env bash
# v0.34, after call 4: the same per-instruction stall sampling on cuDNN's SDPA forward at D = 128 (full and causal,
# B = 4, H = 32, S = 4096, bf16), for the comparison with ours (scripts/device_v34d.sh). No binaries carried.
. "$(dirname "$0")/device_common.sh" "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for M in full causal; do
  echo "== cuDNN D128 $M"
  timeout -k 5 200 "$NCU" --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section LaunchStats --import-source no -k 'regex:(?i)(sdpa|fmha|attn|cudnn)' --launch-skip 2 -c 1 -o "$OUT/cudnn_$M" -f \
    python3 scripts/ncu_sdpa.py 128 $M > "$OUT/ncu_run_cudnn_$M.txt" 2>&1
  echo "rc $?"; tail -2 "$OUT/ncu_run_cudnn_$M.txt"
  "$NCU" -i "$OUT/cudnn_$M.ncu-rep" --page details > "$OUT/details_cudnn_$M.txt" 2>&1
  grep -E "  [a-z_0-9]+ \(|Duration|SM Frequency|Grid Size|Block Size|Registers|Warp Cycles Per Issued" "$OUT/details_cudnn_$M.txt" | head -12
  "$NCU" -i "$OUT/cudnn_$M.ncu-rep" --page source --print-source sass --csv > "$OUT/sass_cudnn_$M.csv" 2>&1
  echo "sass lines $(wc -l < "$OUT/sass_cudnn_$M.csv")"
  rm -f "$OUT/cudnn_$M.ncu-rep"
done
