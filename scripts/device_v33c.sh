#!/usr/bin/env bash
# v0.33 call 3: with round-robin timing in the autotuner — the full race twice (does it agree with itself now?), the
# model's top 3 and the roofline's, each in its own process and cold cache; then the sweep again (+ attention).
source scripts/device_common.sh "${1:-.carry}"
for mode in full model roofline full; do
  echo "== $mode"
  rm -rf /tmp/cache-$mode
  TILEJIT_CACHE_DIR=/tmp/cache-$mode timeout -k 5 150 "$B/predict_tune" --mode $mode --model "$B/h200.model.json" --top-k 3 \
    --out "$OUT/tune_$mode$([ -f $OUT/tune_$mode.json ] && echo 2).json" > "$OUT/tune_$mode.txt" 2>&1; echo "rc $?"; cut -c1-150 "$OUT/tune_$mode.txt"
done
echo "== sweep"
timeout -k 5 300 "$B/predict_sweep" --out "$OUT/h200.json" > "$OUT/sweep.txt" 2>&1; echo "rc $?"
grep -v " timed, 0 not" "$OUT/sweep.txt" | tail -30; tail -1 "$OUT/sweep.txt"
