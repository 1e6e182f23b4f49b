#!/usr/bin/env bash
# v0.33 call 1: the predictor's dataset — every candidate of the sweep's families timed (bench/predict/).
source scripts/device_common.sh "${1:-.carry}"
echo "== quick sweep"
timeout -k 5 120 "$B/predict_sweep" --quick --out "$OUT/quick.json" > "$OUT/quick.txt" 2>&1; echo "rc $?"; tail -5 "$OUT/quick.txt"
echo "== full sweep"
timeout -k 5 "${SWEEP_LIMIT:-420}" "$B/predict_sweep" --out "$OUT/h200.json" > "$OUT/sweep.txt" 2>&1; echo "rc $?"
grep -v " timed, 0 not" "$OUT/sweep.txt" | tail -30; tail -1 "$OUT/sweep.txt"
