#!/usr/bin/env bash
# Everything built in the 2026-11-29 (second) session that has not run on a GPU yet, in one device call
# (6–10 minutes on an H200; its timeouts add up to 15, so keep the call limit in mind). Build here first:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN'
#   cmake --build build-rel -j2 --target tilejit_tests gemm_bench profiler_bench attention_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/{gemm_bench,profiler_bench,attention_bench} .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/*_bench .carry/tilejit_tests
# then run this script on the device with carry [".carry"].
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== attention: varlen, decode, backward on the GPU"
timeout 150 "$B/tilejit_tests" -tc='attention*' > "$OUT/attention.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions" "$OUT/attention.txt" | head -20
echo "== rung 5: one-stage pipeline, fused epilogue (tests), sanitizers on the small cases"
timeout 120 "$B/tilejit_tests" -tc='gemm_v5_gpu*,gemm_split_k_gpu*,gemm_v5_fused*' > "$OUT/gemm.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions" "$OUT/gemm.txt" | head -20
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 "$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu_small*' 2>&1 | tail -2
echo "== profiler GPU tests (PC sampling, graphs, attribution)"
timeout 90 "$B/tilejit_tests" -tc='profiler cupti gpu*' -s > "$OUT/profiler_gpu.txt" 2>&1; echo "rc $?"
grep -E "TEST CASE|ERROR|test cases|assertions" "$OUT/profiler_gpu.txt" | cut -c1-200 | head -20
echo "== benches: fused epilogue vs cuBLAS TN, profiler tiny launches (0..4), long job"
timeout 90 "$B/gemm_bench" --benchmark_filter='BM_CublasTN/(4096|8192)/|BM_TilejitV5Fused' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
timeout 150 "$B/attention_bench" --benchmark_filter="Padded|FlashFwd/D96|Bwd|Decode" --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
timeout 120 python3 bench/attention_baselines.py 2>&1 | tail -12
timeout 60 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunches' 2>&1 | grep -E "^BM_"
timeout 60 "$B/profiler_bench" --long-job=10000000 2>&1 | tail -2
