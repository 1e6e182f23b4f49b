#!/usr/bin/env bash
# v0.33 call 2: the library GEMM tuned on shapes the predictor's data never held — every candidate (full), the
# learned model's top 3, the roofline estimate's top 3 — each mode in its own process with a cold kernel cache.
source scripts/device_common.sh "${1:-.carry}"
ldd "$B/predict_tune" | grep "not found"; ldd "$B/libxgboost.so.0" | grep "not found"
for mode in full model roofline; do
  echo "== $mode"
  rm -rf /tmp/cache-$mode
  TILEJIT_CACHE_DIR=/tmp/cache-$mode timeout -k 5 150 "$B/predict_tune" --mode $mode --model "$B/h200.model.json" --top-k 3 \
    --out "$OUT/tune_$mode.json" > "$OUT/tune_$mode.txt" 2>&1; echo "rc $?"; cut -c1-175 "$OUT/tune_$mode.txt"
done
echo "== full again, warm cache (second process: compile from disk)"
TILEJIT_CACHE_DIR=/tmp/cache-full timeout -k 5 150 "$B/predict_tune" --mode full --out "$OUT/tune_full2.json" > "$OUT/tune_full2.txt" 2>&1; echo "rc $?"; cut -c1-175 "$OUT/tune_full2.txt"
