#!/bin/bash
# v0.34: the library forward and cuDNN on the same input distribution, both ways: attention_bench with uniform
# [-1, 1) inputs (its default) and with N(0, 1) inputs (TJ_BENCH_INPUTS=normal), torch SDPA with randn (its default)
# and uniform (TJ_SDPA_INPUTS=uniform), alternated. Usage: scripts/device_v34g.sh [.carry]  (carry attention_bench)
source scripts/device_common.sh
F='BM_AttnForward/D(64|96|128|256)/'
bench_rows lib_uniform "$B/attention_bench" "$F"
echo "== torch, uniform inputs"
TJ_SDPA_INPUTS=uniform TJ_SDPA_FORWARD_ONLY=1 timeout -k 5 120 python3 bench/attention_baselines.py > "$OUT/torch_uniform.txt" 2>&1; grep cudnn "$OUT/torch_uniform.txt"
TJ_BENCH_INPUTS=normal bench_rows lib_normal "$B/attention_bench" "$F"
echo "== torch, randn inputs"
TJ_SDPA_FORWARD_ONLY=1 timeout -k 5 120 python3 bench/attention_baselines.py > "$OUT/torch_normal.txt" 2>&1; grep cudnn "$OUT/torch_normal.txt"
