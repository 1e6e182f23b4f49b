#!/bin/bash
# v0.29 call 3: the rest of the GPU suite (--first=$3), then the D = 96 exact / padded pair (the same per-item kernel,
# head dim 96 against 96 padded to 128) and the library forward beside torch SDPA.
source scripts/device_common.sh
timeout -k 5 ${2:-300} "$B/tilejit_tests" -tc='*gpu*' -tce='*profiler*,*cupti*' --first=${3:-1} -d > "$OUT/tests.txt" 2>&1
echo "suite rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -30; grep -c " s: " "$OUT/tests.txt"; tail -3 "$OUT/tests.txt"
R='BM_AttnForward/D|BM_FlashFwdPingPongEdge(Padded)?/D96/(full|causal)/128x128/2/'
ROW_LIMIT=90 bench_rows fwd "$B/attention_bench" "$R"
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt" | head -40
