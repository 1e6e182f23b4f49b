#!/usr/bin/env bash
# v0.12, fifth call: decode with one tail step for one token, against the commit before the tokens change
# (attention_bench_old), alternated; the decode GPU tests with the library's one-token kernel.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_decode_tma_library_gpu*,attention_decode_tma_configs_gpu*,attention_more_gpu*'
for r in 1 2; do
  bench_rows "old$r" "$B/attention_bench_old" 'BM_Decode/(llama3_8b|phi3_mini)/32'
  bench_rows "new$r" "$B/attention_bench" 'BM_Decode/(llama3_8b|phi3_mini)/32|BM_DecodeTokens'
done
