#!/usr/bin/env bash
# v0.11, first call: the ping-pong turns now continue across the persistent forward's items, and rematerialisation
# plans for the target arch. GPU tests of the persistent forward (with and without turns), the library forward and
# decode (whose generic kernels' index chains changed); then the persistent forward with and without turns,
# alternated in two rounds; then narrow N in clusters sharing B by TMA multicast beside cuBLAS and rung 5.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,*decode*gpu*,attention_gpu*'
PP='BM_FlashFwdPersistent(EvenN|EvenNPP|PP)?/D(64|96|128)/(full|causal)/128x128'
bench_rows pp1 "$B/attention_bench" "$PP"
bench_rows pp2 "$B/attention_bench" "$PP"
bench_rows narrow "$B/gemm_bench" 'BM_CublasTN(Bf16Out)?/narrow|BM_CublasTN/8192/(96|192)/|BM_TilejitV5Narrow/64x(96/8|192/7)|BM_TilejitV7Narrow|BM_TilejitGemmBf16Out/narrow'
