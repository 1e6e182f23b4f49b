#!/usr/bin/env bash
# Issue 5 (decode): the Hopper decode path, FlashDecodeSplitTma (K and V streamed by TMA into wgmma) behind
# Attention<T>::decode. Its GPU test, compute-sanitizer memcheck on it, and the decode bench rows (the pointer
# kernel and the TMA kernel side by side, the library call, split sizes). About 3 minutes on an H200
# (most of it NVRTC compiles on a cold kernel cache). Build here first:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN' -DTILEJIT_WERROR=ON
#   cmake --build build-rel -j2 --target tilejit_tests attention_bench
#   rm -rf .carry && mkdir -p .carry && cp build-rel/test/tilejit_tests build-rel/bench/attention_bench .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/*_bench .carry/tilejit_tests
# then run this script on the device with carry [".carry"]:  bash scripts/device_decode.sh
. "$(dirname "$0")/device_common.sh" "$@"
echo "== decode GPU tests: the library call (TMA on an H200; the pointer kernel for a misaligned cache) and the TMA configs"
timeout 120 "$B/tilejit_tests" -tc='attention_decode_tma_library_gpu*,attention_decode_tma_configs_gpu*' > "$OUT/decode_tests.txt" 2>&1
echo "rc $?"; grep -E "ERROR|FAILED|test cases|assertions|CRASH" "$OUT/decode_tests.txt" | head -30
echo "== compute-sanitizer memcheck on the library decode GPU test (kernel cache warm from the run above)"
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool memcheck "$B/tilejit_tests" -tc='attention_decode_tma_library_gpu*' > "$OUT/decode_memcheck.txt" 2>&1
echo "rc $?"; grep -E "ERROR SUMMARY|test cases" "$OUT/decode_memcheck.txt" | tail -3
echo "== decode bench: library (TMA on H200), pointer kernel, TMA configs s3/s4ws/s5ws, split sizes"
echo "   (before: library 0.37 of copy for llama3_8b, 0.54 for phi3_mini; target 0.8)"
timeout 120 "$B/attention_bench" --benchmark_filter='Decode' --benchmark_min_time=0.05 > "$OUT/decode_bench.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/decode_bench.txt" | sed 's/ \+/ /g'
