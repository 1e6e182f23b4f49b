# D = 128 backward tiles: the D = 64 winners against the library's (one short call).
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/.carry
timeout 90 .carry/attention_bench --benchmark_filter='BM_FlashBwdTma/D128/full' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror" | sed 's/ \+/ /g'
