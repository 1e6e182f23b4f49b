# Warp specialisation (CompileOptions::warp_specialize / pingpong) on the H200: GPU tests, sanitizers, speed.
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/.carry
B=.carry
timeout 150 $B/tilejit_tests -tc='attention_tma*,gemm_v5_warp*,gemm_v5_gpu*' 2>&1 | grep -E "ERROR|error|test cases|assertions|FAIL" | head -20
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $B/tilejit_tests -tc='gemm_v5_gpu_small*' 2>&1 | tail -1
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool synccheck $B/tilejit_tests -tc='gemm_v5_gpu_small*' 2>&1 | tail -1
timeout 200 $B/attention_bench --benchmark_filter='NoTurns|TmaWs' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
timeout 200 $B/gemm_bench --benchmark_filter='BM_CublasTN/|BM_TilejitV5/128x256/3|BM_TilejitV5Ws' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
