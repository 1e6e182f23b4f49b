#!/usr/bin/env bash
# The TMA-store epilogue (examples::MatmulV6Store, CompileOptions::tma_store): its GPU test against f64 (bf16 and f32
# out, ragged edges clipped by TMA, the staging buffer reused across tiles), then bf16-output rows beside cuBLAS
# writing bf16 and the masked-store epilogue of the same kernel, same call. Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
timeout -k 5 120 "$B/tilejit_tests" -tc='gemm_v6_store*,desc_store*' > "$OUT/tests.txt" 2>&1; echo "tests rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
SH='(4096/4096/4096|8192/8192/8192|4096/6144/4096|4096/28672/4096|4096/4096/14336|16384/6144/4096)'
timeout -k 5 200 "$B/gemm_bench" --benchmark_filter="BM_(CublasTNBf16Out|TilejitBf16Out/v6/128x256/4|TilejitV6Store/128x256/3|TilejitV6StoreMasked/128x256/3)/$SH" \
  --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
