#!/usr/bin/env bash
# What the 2026-11-29 (fourth) session built after its device time was spent: the warp-specialisation fixes
# (kernels declared __maxnreg__(64K / threads) so setmaxnreg.inc never waits for registers the program does not
# have; ping-pong refused when a consumer barrier falls in a turn; > 1024 threads refused) and the unmasked
# forward (FlashAttnFwdTmaPingPongEvenN: GPU test + speed). About 4 minutes on
# an H200. Build here first:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN'
#   cmake --build build-rel -j2 --target tilejit_tests attention_bench gemm_bench profiler_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/{attention_bench,gemm_bench,profiler_bench} .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/*_bench .carry/tilejit_tests
# then run this script on the device with carry [".carry"].
. "$(dirname "$0")/device_common.sh" "$@"
echo "== warp-specialised GPU tests (gemm_v5_warp includes a light 128x64 kernel that hung before __maxnreg__)"
timeout 150 "$B/tilejit_tests" -tc='gemm_v5_warp*,attention_tma_warp*,attention_library_forward_gpu*' > "$OUT/ws.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/ws.txt" | head -20
timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool synccheck "$B/tilejit_tests" -tc='attention_tma_warp*' 2>&1 | tail -1
echo "== the library forward after __launch_bounds__ -> __maxnreg__ (v0.5: 255.0 274.6 360.6 333.2 447.9 399.4)"
timeout 100 "$B/attention_bench" --benchmark_filter='BM_AttnForward' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== no key mask (FlashAttnFwdTmaPingPongEvenN) beside the masked kernel, full attention, 128x128 (predicted +5-15%)"
timeout 100 "$B/attention_bench" --benchmark_filter='EvenN|NoTurns/D(64|96|128)/full/128x128' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== rung 5 with a producer warp group (v0.5: 256x128/4 658.1 at 4096^3)"
timeout 100 "$B/gemm_bench" --benchmark_filter='BM_CublasTN/4096/4096/4096|BM_TilejitV5Ws/(128x256|256x128)/4/4096/4096/4096' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== profiler: tiny launches as 9 paired rounds (issue 6 target: median ratio < 1.3)"
timeout 120 "$B/profiler_bench" --benchmark_filter='TinyLaunchesPaired' 2>&1 | grep -E "^BM_|rror"
