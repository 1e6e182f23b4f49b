# The fourth session's last H200 call: every new GPU test, sanitizers on the new paths, the library calls
# beside torch, decode after the planner change, GEMM rung 2 after it. Outputs under $OUT.
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/.carry
B=.carry
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 170 $B/tilejit_tests -tc='attention_library_forward*,attention_tma_warp*,gemm_v5_warp*,attention_backward_library*,attention_more_gpu*,gemm_v1_gpu*,gemm_v2_gpu*,register_trans_gpu*' > "$OUT/tests.txt" 2>&1; echo "tests rc $?"
grep -E "ERROR|test cases|assertions" "$OUT/tests.txt" | head -12
timeout 80 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/tilejit_tests -tc='attention_backward_library_gpu*' 2>&1 | tail -1
timeout 80 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $B/tilejit_tests -tc='attention_more_gpu*' 2>&1 | tail -1
timeout 150 $B/attention_bench --benchmark_filter='BM_AttnForward|BM_AttnBackward|BM_FlashBwdTma|Decode|NoTurns/D(96|128)/full/128x128' --benchmark_min_time=0.1 > "$OUT/attn.txt" 2>&1
grep -E "BM_|rror" "$OUT/attn.txt" | sed 's/ \+/ /g'
timeout 110 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; tail -28 "$OUT/torch.txt"
timeout 60 $B/gemm_bench --benchmark_filter='BM_Cublas/4096/4096/4096|BM_TilejitV2/128x128/4096/4096/4096|BM_TilejitV2/128x96|BM_TilejitV2/128x192|BM_Cublas/8192/(96|192)/' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
