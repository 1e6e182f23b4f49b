#!/usr/bin/env bash
# v0.7, second call: rung 7 (clusters + TMA multicast of B) — its GPU tests, compute-sanitizer, and its rows beside
# cuBLAS TN and rung 5/6 on the large shapes; the attention forward with P carried as bf16 (no spills at D128):
# its GPU tests and the library rows. Carry tilejit_tests, attention_bench and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='gemm_v7_gpu*,attention_tma*gpu*,attention_library_forward_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
SAN=/usr/local/cuda/bin/compute-sanitizer
if [ -x "$SAN" ]; then
  for tool in memcheck synccheck; do
    echo "== $tool on gemm_v7_gpu"
    timeout -k 5 120 "$SAN" --tool $tool "$B/tilejit_tests" -tc='gemm_v7_gpu*' 2>&1 | grep -E "ERROR SUMMARY|test cases|RACECHECK SUMMARY" | head -4
  done
fi
echo "== GEMM rung 7"
SH='(4096/4096/4096|8192/8192/8192|16384/6144/4096|4096/28672/4096)'
timeout -k 5 200 "$B/gemm_bench" --benchmark_filter="BM_(CublasTN|TilejitV7/(128x256/4/(1|2)|256x128/4/2|128x192/4/2|128x128/4/4)|TilejitV6Ws/128x256/4)/$SH" --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
echo "== attention forward, P carried in bf16"
timeout -k 5 100 "$B/attention_bench" --benchmark_filter='BM_AttnForward|BM_FlashFwdPingPongEdgePadded|BM_FlashFwdPingPongEdge/D96/.*/128x128/2' --benchmark_min_time=0.1 2>&1 | grep -E "BM_|rror"
