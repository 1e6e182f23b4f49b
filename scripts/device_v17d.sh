#!/bin/bash
# v0.17 call 5: register-A wgmma operands pinned past their wait (a store that never runs reads them after
# wgmma.wait_group, codegen pin_register_a) — does ptxas now run the softmax under P·V? The SASS order of the
# attention kernels compiled here, the forward GPU tests, then the library forward old (attention_bench_old, the
# commit before) / new alternated with torch SDPA between.
source scripts/device_common.sh
bash scripts/device_sass.sh .carry pp_d128_full pp_d128_causal pp_d64_full pp_d96_full per_d128_full per_d64_causal 2>&1 | grep -v "^NVIDIA"
gpu_tests 'attention*gpu*'
ab_rounds 'BM_AttnForward/' 'BM_AttnForward/'
