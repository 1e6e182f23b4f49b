#!/bin/bash
# v0.34: does the input distribution move the comparison with cuDNN? torch SDPA forward on torch.randn inputs (its
# default) and on uniform [-1, 1) inputs (attention_bench's FwdData), with the library's rows between, twice.
# Usage: scripts/device_v34f.sh [.carry]   (carry attention_bench)
source scripts/device_common.sh
F='BM_AttnForward/D(64|96|128|256)/'
for round in 1 2; do
  echo "== torch, randn inputs ($round)"
  TJ_SDPA_FORWARD_ONLY=1 timeout -k 5 120 python3 bench/attention_baselines.py > "$OUT/torch_normal$round.txt" 2>&1; grep cudnn "$OUT/torch_normal$round.txt"
  bench_rows lib$round "$B/attention_bench" "$F"
  echo "== torch, uniform inputs ($round)"
  TJ_SDPA_INPUTS=uniform TJ_SDPA_FORWARD_ONLY=1 timeout -k 5 120 python3 bench/attention_baselines.py > "$OUT/torch_uniform$round.txt" 2>&1; grep cudnn "$OUT/torch_uniform$round.txt"
done
