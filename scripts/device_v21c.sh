#!/bin/bash
# v0.21 call 4: the cp.async ring's interior fast path (one cp.async per chunk, no test per chunk; edge blocks out
# of line or inline) against the previous build, alternated: the mma.sync GEMM and the mma.sync attention forward.
source scripts/device_common.sh
G='BM_(CublasTN<>|TilejitMmaSync/(128x256/3|256x128/3|128x128/3|128x256/4))/(4096/4096/4096|8192/8192/8192)'
A='BM_AttnForwardMmaSync/D(64|128)/(full|causal)'
bench_rows gold "$B/gemm_bench_old" "$G"; bench_rows gnew "$B/gemm_bench" "$G"; bench_rows ginl "$B/gemm_bench_inl" "$G"
bench_rows aold "$B/attention_bench_old" "$A"; bench_rows anew "$B/attention_bench" "$A"
bench_rows gold2 "$B/gemm_bench_old" "$G"; bench_rows gnew2 "$B/gemm_bench" "$G"; bench_rows ginl2 "$B/gemm_bench_inl" "$G"
