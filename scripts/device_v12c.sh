#!/usr/bin/env bash
# v0.12, third call: decode with a few query tokens (GPU tests, memcheck, bandwidth rows), the profiler's cuBLAS
# attribution and graph cases, and the bf16 GEMM library beside cuBLAS with gemm_bench's new ratio table.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_decode_tma_library_gpu*,attention_decode_tma_configs_gpu*,attention_more_gpu*,profiler cupti gpu*'
echo "== compute-sanitizer memcheck on the library decode GPU test"
timeout 240 /usr/local/cuda/bin/compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='attention_decode_tma_library_gpu*' > "$OUT/decode_memcheck.txt" 2>&1
echo "rc $?"; grep -E "ERROR SUMMARY|test cases" "$OUT/decode_memcheck.txt" | tail -3
bench_rows decode "$B/attention_bench" 'BM_Decode/llama3_8b/32|BM_DecodeTokens|BM_Decode/phi3_mini/32'
echo "== GEMM bf16 C, library vs cuBLAS (ratio table)"
timeout -k 5 200 "$B/gemm_bench" --benchmark_filter='BM_CublasTNBf16Out/large|BM_TilejitGemmBf16Out/large' --benchmark_min_time=0.1 > "$OUT/gemm.txt" 2>&1; echo "rc $?"
sed -n '/Ratio to cuBLAS/,$p' "$OUT/gemm.txt"
