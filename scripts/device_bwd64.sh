# The backward with the sweeps' winning tiles (FlashBwdTmaConfig): GPU tests, racecheck, speed of the library call.
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/.carry
B=.carry
timeout 60 $B/tilejit_tests -tc='attention_backward_library_gpu*' 2>&1 | grep -E "ERROR|test cases|assertions|CRASH" | head
timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $B/tilejit_tests -tc='attention_backward_library_gpu*' 2>&1 | tail -1
timeout 60 $B/attention_bench --benchmark_filter='BM_AttnBackward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
