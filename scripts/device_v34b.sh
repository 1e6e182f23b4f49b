#!/bin/bash
# v0.34 call 2: exp2 throughput in registers with one register in K on the FMA pipe (rowwise_bench's
# BM_Exp2Split/K, K = 0 (all on the SFU), 8, 4, 3, 2, 1 (all on the FMA pipe)), two rounds.
# Usage: scripts/device_v34b.sh [.carry]
source scripts/device_common.sh
ldd "$B/rowwise_bench" | grep -i "not found"
bench_rows e1 "$B/rowwise_bench" 'BM_Exp2Split'
bench_rows e2 "$B/rowwise_bench" 'BM_Exp2Split'
