#!/usr/bin/env bash
# v0.7, seventh call: is the f32 epilogue what keeps the GEMM below cuBLAS? bf16 output (rung 5 and rung 6 through
# their fused epilogues, no activation) beside cuBLAS writing bf16, and both beside the f32-output rows, same call.
# Carry gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
SH='(4096/4096/4096|8192/8192/8192|4096/6144/4096|4096/28672/4096|4096/4096/14336|16384/6144/4096)'
timeout -k 5 200 "$B/gemm_bench" --benchmark_filter="BM_(CublasTN|CublasTNBf16Out|TilejitBf16Out/.*|TilejitV6Ws/128x256/4|TilejitV5/128x256/4)/$SH" \
  --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
