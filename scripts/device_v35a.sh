#!/bin/bash
# v0.35: why the library forward loses ~8% between one launch under Nsight and the bench loop while cuDNN loses
# nothing: SM clock, power and throttle reasons sampled (nvidia-smi, 50 ms) while each runs back to back for a few
# seconds; then nsys kernel durations of both under the same loops. Usage: scripts/device_v35a.sh [.carry]
source scripts/device_common.sh
nvidia-smi --query-gpu=power.limit,power.max_limit,clocks.max.sm,clocks.max.mem --format=csv
which nsys ncu 2>&1 | head -3
# sample NAME CMD...: run CMD with nvidia-smi sampling into $OUT/smi_NAME.csv; print CMD's last lines and the
# sampled clock / power / temperature medians over the middle of the window, plus the throttle reasons seen.
sample() {
  local name=$1; shift
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader,nounits -lms 50 > "$OUT/smi_$name.csv" &
  local smi=$!
  sleep 0.3
  "$@" > "$OUT/run_$name.txt" 2>&1
  kill $smi; wait $smi 2>/dev/null
  echo "== $name"; grep -E "BM_|cudnn" "$OUT/run_$name.txt" | sed 's/ \+/ /g' | cut -c1-140
  python3 - "$OUT/smi_$name.csv" <<'PY'
import sys, statistics as st
rows = [r.split(", ") for r in open(sys.argv[1]) if r.count(",") >= 4]
busy = [r for r in rows if float(r[2]) > 200] or rows  # samples while the GPU draws load power
n = len(busy); mid = busy[n // 5: n - n // 10] or busy
f = lambda i: st.median(float(r[i]) for r in mid)
reasons = sorted({r[4].strip() for r in mid})
print(f"  samples {len(rows)} busy {n}: SM clock median {f(1):.0f} MHz (min {min(float(r[1]) for r in mid):.0f}), "
      f"power {f(2):.0f} W (max {max(float(r[2]) for r in mid):.0f}), temp {f(3):.0f} C, reasons {reasons}")
PY
}
for C in full causal; do
  sample lib_d128_$C "$B/attention_bench" --benchmark_filter="^BM_AttnForward/D128/$C/" --benchmark_min_time=4
  sample cudnn_d128_$C python3 bench/sdpa_sustained.py 128 $C 5 uniform
done
sample lib_d256_causal "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D256/causal/' --benchmark_min_time=4
sample cudnn_d256_causal python3 bench/sdpa_sustained.py 256 causal 5 uniform
sample lib_d64_full "$B/attention_bench" --benchmark_filter='^BM_AttnForward/D64/full/' --benchmark_min_time=4
sample cudnn_d64_full python3 bench/sdpa_sustained.py 64 full 5 uniform
# The same pairs from a cool GPU (3 s idle before each), 0.15 s each: the regime of the short bench rows.
for C in full causal; do
  sleep 3; sample cool_lib_d128_$C "$B/attention_bench" --benchmark_filter="^BM_AttnForward/D128/$C/" --benchmark_min_time=0.15
  sleep 3; sample cool_cudnn_d128_$C python3 bench/sdpa_sustained.py 128 $C 0.15 uniform
done
