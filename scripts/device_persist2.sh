#!/usr/bin/env bash
# The persistent Hopper forward (examples/attention/flash_fwd_persistent.hpp): its GPU tests (kernel and library
# switch, against f64 with poisoned outputs), compute-sanitizer synccheck and racecheck on one small case, and its
# bench rows beside the one-program-per-item kernel (BM_FlashFwdPingPongEdge) and the library call (with and
# without set_persistent_forward). About 4 minutes on an H200, at most 6 (every step has a timeout). Build here first:
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH='$ORIGIN' -DTILEJIT_WERROR=ON
#   make -C build -j2 tilejit_tests attention_bench
#   rm -rf .carry && mkdir -p .carry && cp build/test/tilejit_tests build/bench/attention_bench .carry/
#   cp -L /usr/lib/x86_64-linux-gnu/{libfmt.so.9,libxxhash.so.0,libbenchmark.so.1debian} .carry/ && strip .carry/*_bench .carry/tilejit_tests
# then on the device with carry [".carry"]: bash scripts/device_persist2.sh
. "$(dirname "$0")/device_common.sh" "$@"
SAN=/usr/local/cuda/bin/compute-sanitizer
echo "== GPU tests: the kernel (D 64/96/128, causal/full, GQA, ragged S, sections, NaN in a neighbouring head's V) and the library switch"
timeout -k 5 120 "$B/tilejit_tests" -tc='attention_persistent_gpu*,attention_library_persistent_forward_gpu*,attention_library_forward_gpu*' \
  > "$OUT/gpu_tests.txt" 2>&1; echo "rc $? (124: timed out)"
grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/gpu_tests.txt" | head -20
echo "== compute-sanitizer on attention_persistent_gpu_small_for_the_sanitizers (2 programs x 4-6 items, WS)"
timeout -k 5 40 "$SAN" --tool synccheck "$B/tilejit_tests" -tc='attention_persistent_gpu_small_for_the_sanitizers' > "$OUT/synccheck.txt" 2>&1; echo "synccheck rc $?"
grep -E "ERROR SUMMARY|test cases" "$OUT/synccheck.txt"
timeout -k 5 50 "$SAN" --tool racecheck --racecheck-report all "$B/tilejit_tests" -tc='attention_persistent_gpu_small_for_the_sanitizers' > "$OUT/racecheck.txt" 2>&1; echo "racecheck rc $?"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test cases" "$OUT/racecheck.txt"
echo "== bench (B=4 H=32 S=4096 bf16): persistent, one program per item, the library (default and persistent)"
timeout -k 5 140 "$B/attention_bench" \
  --benchmark_filter='BM_FlashFwdPersistent|BM_FlashFwdPingPongEdge/D(64|96|128)/.*/128x128/2|BM_AttnForward' \
  --benchmark_min_time=0.1 > "$OUT/bench.txt" 2>&1; echo "bench rc $?"
grep -E "BM_|rror" "$OUT/bench.txt" | sed 's/ \+/ /g'
