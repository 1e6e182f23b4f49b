#!/usr/bin/env bash
# v0.11, fifth call: the closing table — the library calls beside their baselines in one run: GEMM bf16 C against
# cuBLAS writing bf16 (large and narrow shapes), the attention forward (FwdSchedule::automatic) against torch SDPA.
. "$(dirname "$0")/device_common.sh" "$@"
bench_rows large "$B/gemm_bench" 'BM_CublasTNBf16Out/large|BM_TilejitGemmBf16Out/large'
bench_rows narrow "$B/gemm_bench" 'BM_CublasTNBf16Out/narrow|BM_TilejitGemmBf16Out/narrow'
bench_rows attn "$B/attention_bench" 'BM_AttnForward/'
echo "== torch SDPA, same call"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
