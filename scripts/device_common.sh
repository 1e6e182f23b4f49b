# Sourced by the scripts/device_*.sh scripts, first thing: B = the folder of carried binaries and shared
# libraries ($1, default .carry), OUT = where results go (the device tool's $OUT), the kernel cache and library
# path, and one line naming the GPU and its driver.
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/$B
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
# bench_rows NAME BIN FILTER: BIN's benchmark rows matching FILTER (0.1 s each) into $OUT/bench_NAME.txt, printed.
bench_rows() {
  echo "== $1"
  timeout -k 5 120 "$2" --benchmark_filter="$3" --benchmark_min_time=0.1 > "$OUT/bench_$1.txt" 2>&1; echo "rc $?"
  grep -E "BM_|rror" "$OUT/bench_$1.txt" | sed 's/ \+/ /g' | cut -c1-130
}
