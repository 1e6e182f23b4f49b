# The warp-specialised GEMM after the setmaxnreg pool fix (four consumer warp groups hung before it).
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/.carry
B=.carry
timeout 90 $B/tilejit_tests -tc='gemm_v5_warp*' 2>&1 | grep -E "ERROR|test cases|assertions|CRASH" | head
timeout 60 $B/gemm_bench --benchmark_filter='BM_TilejitV5Ws/256x128/4/(4096/4096/4096|8192/8192/8192)' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
