#!/bin/bash
# v0.37 call 2: issue 4's and issue 6's tables from one call, binaries of 80dc3bf. GEMM: the bf16 library call
# beside cuBLAS writing bf16 (large, narrow N, small M), f16 in and out, f8 e4m3 beside cuBLASLt. Profiler: the
# GPU-bound loop (4096³ GEMMs, plain / profiled / flushing every 100), the tiny launches paired and pinned to one
# CPU, and CUPTI's records-only floor; then a real profile of a mixed tilejit + cuBLAS program for the viewer.
# Usage: scripts/device_v37b.sh [.carry]
source scripts/device_common.sh
ROW_LIMIT=280 bench_rows bf16 "$B/gemm_bench" 'BM_(TilejitGemmBf16Out|CublasTNBf16Out)/(large|narrow|small)/'
ROW_LIMIT=100 bench_rows f16 "$B/gemm_bench" 'BM_(TilejitGemmF16|CublasTNF16)/large/'
ROW_LIMIT=100 bench_rows f8 "$B/gemm_bench" 'BM_TilejitV5F8/128x256/|BM_CublasLtF8/'
echo "== profiler: GEMM loop"
timeout -k 5 120 "$B/profiler_bench" --benchmark_filter='BM_GemmLoop' > "$OUT/prof_gemm.txt" 2>&1; echo "rc $?"
grep -E "^BM_|rror" "$OUT/prof_gemm.txt" | sed 's/ \+/ /g' | cut -c1-200
for cpu in 5 9; do
  echo "== profiler: tiny launches pinned to CPU $cpu"
  timeout -k 5 120 taskset -c $cpu "$B/profiler_bench" --benchmark_filter='BM_TinyLaunchesPaired|BM_CuptiKnobs/(0|9)/' > "$OUT/prof_tiny$cpu.txt" 2>&1; echo "rc $?"
  grep -E "^BM_|rror" "$OUT/prof_tiny$cpu.txt" | sed 's/ \+/ /g' | cut -c1-260
done
echo "== profiler: tiny launches flushing every 100 (BM_TinyLaunches/0,1,2)"
timeout -k 5 120 taskset -c 5 "$B/profiler_bench" --benchmark_filter='BM_TinyLaunches/[012]/' > "$OUT/prof_flush.txt" 2>&1; echo "rc $?"
grep -E "^BM_|rror" "$OUT/prof_flush.txt" | sed 's/ \+/ /g' | cut -c1-200
echo "== a real profile through the viewer: the CUPTI cases' profiles (tilejit kernels in two scopes, cuBLAS beside a"
echo "   tilejit kernel, a captured and replayed graph, PC sampling), each viewed with tilejit prof view"
timeout -k 5 120 "$B/tilejit_tests" -tc='profiler cupti gpu*' > "$OUT/t_cupti.txt" 2>&1; echo "rc $?"
python3 - "$OUT" <<'P'
import json, re, sys
out = sys.argv[1]
n = 0
for line in open(f"{out}/t_cupti.txt", errors="replace"):
    m = re.search(r"MESSAGE: profile: (.*)$", line)
    if not m: continue
    j = json.loads(m.group(1))
    if isinstance(j, dict): j = [j]
    n += 1
    json.dump(j, open(f"{out}/profile{n}.json", "w"))
print(n, "profiles")
P
for f in "$OUT"/profile*.json; do
  echo "-- $(basename "$f")"; "$B/tilejit" prof view -m time/ms,avg_time/us,count,tflop16/s,gbyte/s "$f" 2>&1 | cut -c1-200 | head -40
done
