#!/usr/bin/env bash
# v0.33 call 4: the autotuner's and the predictor's tests on the GPU (round-robin timing, ranking, the GEMM races
# through the tuner), then the model's top 3 on new shapes with the final code.
source scripts/device_common.sh "${1:-.carry}"
echo "== GPU tests"
timeout -k 5 400 "$B/predict_tests" -tc='*autotune*,*predict*,gemm_tuned*,gemm_store_race*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -30
echo "== model top 3, final code"
rm -rf /tmp/cache-m
TILEJIT_CACHE_DIR=/tmp/cache-m timeout -k 5 150 "$B/predict_tune" --mode model --model "$B/h200.model.json" --top-k 3 \
  --out "$OUT/tune_model.json" > "$OUT/tune_model.txt" 2>&1; echo "rc $?"; cut -c1-150 "$OUT/tune_model.txt"
