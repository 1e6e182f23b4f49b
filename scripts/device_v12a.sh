#!/usr/bin/env bash
# v0.12, first call: the GPU tests of this session's changes (D = 256 forward, the launch hook's flops and bytes
# under CUPTI), D = 256 and D = 128 with 144-wide key blocks beside the kernels the library runs, torch SDPA (D = 256
# added), and the tiny-launch overhead now that a hooked launch computes its cost.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_library_forward_gpu*,profiler cupti gpu*,profiler_launch_hook*,launch_cost*'
bench_rows d128 "$B/attention_bench" 'BM_FlashFwdPersistent(EvenN)?/D128/full/|BM_FlashFwdPingPongEdge/D128/full/128x1[24]|BM_AttnForward/D128/full'
bench_rows d256 "$B/attention_bench" 'BM_AttnForward/D256'
echo "== torch SDPA, same call"
timeout -k 5 200 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -18 "$OUT/torch.txt"
bench_rows d128b "$B/attention_bench" 'BM_FlashFwdPersistent(EvenN)?/D128/full/|BM_FlashFwdPingPongEdge/D128/full/128x1[24]'
echo "== tiny launches"
timeout -k 5 150 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired' > "$OUT/tiny.txt" 2>&1; echo "rc $?"
grep -E "BM_|ratio|rror" "$OUT/tiny.txt" | cut -c1-160
