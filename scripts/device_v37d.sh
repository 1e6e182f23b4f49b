#!/bin/bash
# v0.37 call 4: issue 4's large shapes at the 700 W power cap, as attention's table is measured: each row runs back to
# back for 2 s (the H200 reaches its cap within the first), cuBLAS writing bf16, the library call (its stored race
# winner: the first process races, the others read the winner) and the fixed rung-6 128x256/4 TMA-store kernel,
# alternated per shape, two rounds; then f16 in and out (library, cuBLAS), one round. Usage: scripts/device_v37d.sh
source scripts/device_common.sh
# gsus NAME FILTER: gemm_bench's rows matching FILTER back to back for 2 s; "NAME TFLOP/s=..." (from the JSON output).
gsus() {
  timeout -k 5 60 "$B/gemm_bench" --benchmark_filter="$2" --benchmark_min_time=2 --benchmark_out="$OUT/g.json" \
    --benchmark_out_format=json > /dev/null 2>&1
  echo "$1 TFLOP/s=$(python3 -c 'import json,sys; print(" ".join("%.1f" % b["TFLOP/s"] for b in json.load(open(sys.argv[1]))["benchmarks"]))' "$OUT/g.json" 2>&1 | tail -1)" |
    tee -a "$OUT/sustained.txt"
}
S="4096/4096/4096 8192/8192/8192 4096/6144/4096 4096/28672/4096 4096/4096/14336 16384/6144/4096 16384/4096/4096 16384/28672/4096 16384/4096/14336"
for r in 1 2; do
  for s in $S; do
    gsus "r$r cublas $s" "^BM_CublasTNBf16Out/large/$s/"
    gsus "r$r library $s" "^BM_TilejitGemmBf16Out/large/$s/"
    gsus "r$r fixed128x256/4 $s" "^BM_TilejitV6Store/128x256/4/large/$s/"
  done
done
for s in $S; do
  gsus "f16 cublas $s" "^BM_CublasTNF16/large/$s/"
  gsus "f16 library $s" "^BM_TilejitGemmF16/large/$s/"
done
