export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/.carry
B=.carry
timeout 150 $B/tilejit_tests -tc='attention_tma*' 2>&1 | grep -E "ERROR|error|test cases|assertions|FAIL" | head -20
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $B/tilejit_tests -tc='attention_tma_warp_specialised_gpu*' 2>&1 | tail -2
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool synccheck $B/tilejit_tests -tc='attention_tma_warp_specialised_gpu*' 2>&1 | tail -2
timeout 200 $B/attention_bench --benchmark_filter='PingPong|TmaWs|FlashFwdTma/D128/full/128x64/3|FlashFwdTma/D128/full/128x128|FlashFwdTma/D64/full/128x64/3|FlashFwdTma/D96/full/128x64/3|Padded/D96/full/128x64' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
