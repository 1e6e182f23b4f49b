#!/usr/bin/env bash
# One call on the lent GPU for GEMM rung 5 (and the profiler's GPU tests):
# rung 5's GPU tests (incl. 16-config tuning + reuse by a second process),
# SASS evidence (HGMMA/QGMMA, UTMALDG) of the two carried cubins,
# compute-sanitizer memcheck/racecheck on rung 5, then gemm_bench's rung-5
# rows beside cuBLAS/cuBLASLt with the same operand layout (B stored [N, K]).
#   scripts/device_run_v5.sh [.carry] [gemm_bench filter]
set -u
B=${1:-.carry}
FILTER=${2:-'BM_CublasTN|BM_TilejitV5|BM_CublasLtF8'}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== rung 5 GPU tests"
"$B/tilejit_tests" -tc='gemm_v5*,desc*,fp8*,gemm_tuned*' -s 2>&1 > "$OUT/tests.txt"
grep -E "ERROR|FAILED|test cases|assertions|MESSAGE: (16 GEMM|stored)|best " "$OUT/tests.txt" | head -40
echo "== profiler GPU tests"
"$B/tilejit_tests" -tc='profiler*' -tce='*plugin*' > "$OUT/profiler.txt" 2>&1; echo "rc $?"; grep -E "ERROR|test cases|assertions" "$OUT/profiler.txt" | head
echo "== SASS"
OBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for f in "$B"/*.cubin; do
  "$OBJ" -sass "$f" > "$OUT/$(basename "$f").sass" 2>&1
  echo "$(basename "$f"): HGMMA $(grep -c HGMMA "$OUT/$(basename "$f").sass") QGMMA $(grep -c QGMMA "$OUT/$(basename "$f").sass") UTMALDG $(grep -c UTMALDG "$OUT/$(basename "$f").sass") SYNCS $(grep -c SYNCS "$OUT/$(basename "$f").sass")"
  grep -m3 -E "HGMMA|QGMMA|UTMALDG" "$OUT/$(basename "$f").sass"
done
echo "== compute-sanitizer on rung 5"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$CS" --tool memcheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu*' 2>&1 | tail -2
"$CS" --tool racecheck --error-exitcode 9 "$B/tilejit_tests" -tc='gemm_v5_gpu*' 2>&1 | tail -2
echo "== gemm_bench ($FILTER)"
"$B/gemm_bench" --benchmark_filter="$FILTER" --benchmark_min_time=0.15 --benchmark_out="$OUT/gemm_bench.json" \
  --benchmark_out_format=json 2>&1 | tee "$OUT/gemm_bench.txt" | grep -E "BM_|rror" | sed -E 's/ +[0-9.]+ ms +[0-9]+ / /'
