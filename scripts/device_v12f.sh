#!/usr/bin/env bash
# v0.12, sixth call: every GPU test of the suite at this session's final code (mma.sync tf32 / i8 / f8 on sm_90
# included), and the one-token decode beside the commit before the tokens change (attention_bench_old).
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests '*gpu*'
grep -c "TEST CASE" "$OUT/tests.txt"
bench_rows old "$B/attention_bench_old" 'BM_Decode/(llama3_8b|phi3_mini)/32'
bench_rows new "$B/attention_bench" 'BM_Decode/(llama3_8b|phi3_mini)/32|BM_DecodeTokens'
