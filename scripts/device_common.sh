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
# (ROW_LIMIT: seconds allowed, default 120.)
bench_rows() {
  echo "== $1"
  timeout -k 5 "${ROW_LIMIT:-120}" "$2" --benchmark_filter="$3" --benchmark_min_time=0.1 > "$OUT/bench_$1.txt" 2>&1; echo "rc $?"
  grep -E "BM_|rror" "$OUT/bench_$1.txt" | sed 's/ \+/ /g' | cut -c1-130
}
# gpu_tests FILTER: tilejit_tests' cases matching FILTER (doctest -tc) into $OUT/tests.txt, with the summary printed.
gpu_tests() {
  echo "== GPU tests"
  timeout -k 5 480 "$B/tilejit_tests" -tc="$1" -d > "$OUT/tests.txt" 2>&1; echo "rc $?"
  grep -E "ERROR|test cases|assertions|CRASH|skipping" "$OUT/tests.txt" | head -30
}
# sanitize TOOL FILTER [LIMIT]: compute-sanitizer TOOL (racecheck, memcheck, ...) on tilejit_tests' cases matching
# FILTER into $OUT/TOOL.txt (LIMIT seconds, default 200), with its summary printed.
sanitize() {
  timeout -k 5 "${3:-200}" compute-sanitizer --tool "$1" "$B/tilejit_tests" -tc="$2" > "$OUT/$1.txt" 2>&1; echo "rc $?"
  tail -2 "$OUT/$1.txt"
}
# torch_rounds FILTER [LINES]: attention_bench's rows matching FILTER, torch SDPA's table (its first LINES lines
# printed, default 17), then the rows again: the library beside its baselines in one call.
torch_rounds() {
  bench_rows r1 "$B/attention_bench" "$1"
  echo "== torch SDPA, same call"
  timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -"${2:-17}" "$OUT/torch.txt"
  bench_rows r2 "$B/attention_bench" "$1"
}
# ab_rounds OLD_FILTER NEW_FILTER: the previous commit's attention_bench_old rows and this one's attention_bench rows,
# alternated in two rounds (old1 new1, torch SDPA, old2 new2) so both see the same clocks.
ab_rounds() {
  bench_rows old1 "$B/attention_bench_old" "$1"
  bench_rows new1 "$B/attention_bench" "$2"
  echo "== torch SDPA, same call"
  timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; head -14 "$OUT/torch.txt"
  bench_rows old2 "$B/attention_bench_old" "$1"
  bench_rows new2 "$B/attention_bench" "$2"
}
# sustained NAME FILTER [SECONDS] [BIN]: BIN's (attention_bench by default) rows matching FILTER run back to back for
# SECONDS (default 3; the H200 reaches its 700 W power cap within the first), printed as "NAME TFLOP/s=..." and
# appended to $OUT/sustained.txt.
sustained() {
  echo "$1 $(timeout -k 5 60 "$B/${4:-attention_bench}" --benchmark_filter="$2" --benchmark_min_time="${3:-3}" 2>&1 | grep -o 'TFLOP/s=[0-9.]*')" |
    tee -a "$OUT/sustained.txt"
}
# ncu_counts NAME KERNEL_REGEX METRICS CMD...: Nsight Compute's METRICS (comma-separated) for the third launch of a
# kernel matching KERNEL_REGEX under CMD, clocks not locked; one line "== ncu NAME: metric=value ..." (the CSV in
# $OUT/ncu_NAME.csv).
ncu_counts() {
  local name=$1 kre=$2 m=$3
  shift 3
  timeout -k 5 150 ncu --clock-control none --kernel-name "regex:$kre" --launch-skip 2 --launch-count 1 --metrics "$m" --csv "$@" \
    > "$OUT/ncu_$name.csv" 2>&1
  echo "== ncu $name: $(grep '^"' "$OUT/ncu_$name.csv" | awk -F'","' 'NR>1 {printf "%s=%s ", $(NF-2), $NF}' | tr -d '"' | sed 's/__/_/g')"
}
# carried_tests FILTER SECONDS TAG: the carried doctest binary rs_gpu's cases matching FILTER into $OUT/t_TAG.txt;
# one line with the exit status, cases and assertions, then the first failures.
carried_tests() {
  timeout -k 5 "$2" "$B/rs_gpu" -tc="$1" > "$OUT/t_$3.txt" 2>&1
  echo "$1: rc $? $(grep -E 'test cases' "$OUT/t_$3.txt" | tr -s ' ') $(grep -E 'assertions' "$OUT/t_$3.txt" | tr -s ' ')"
  grep -m3 -A3 ERROR "$OUT/t_$3.txt"
}
# cap_table: the library forward (attention_bench's BM_AttnForward rows) beside torch SDPA's cuDNN and flash backends
# at the power cap, every head dim and mask, 3 s a row, ours then cuDNN then flash; then D = 96 exact against the same
# kernel padded to 128. Everything also into $OUT/sustained.txt.
cap_table() {
  local D C
  for D in 64 96 128 256; do
    for C in full causal; do
      sustained "ours D$D $C" "^BM_AttnForward/D$D/$C/"
      timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform cudnn | tee -a "$OUT/sustained.txt"
      timeout -k 5 60 python3 bench/sdpa_sustained.py $D $C 3 uniform flash | tee -a "$OUT/sustained.txt"
    done
  done
  for C in full causal; do
    sustained "D96 exact $C" "^BM_FlashFwdPingPongEdge/D96/$C/128x128/2/"
    sustained "D96 padded $C" "^BM_FlashFwdPingPongEdgePadded/D96/$C/128x128/2/"
  done
}
# old_new_cap SECONDS ROW...: for each attention_bench row name ROW (e.g. D128/full), attention_bench_old's
# BM_AttnForward/ROW then attention_bench's, SECONDS each at the power cap; two rounds, alternated.
old_new_cap() {
  local s=$1 r row
  shift
  for r in 1 2; do
    for row in "$@"; do
      sustained "old $row" "^BM_AttnForward/$row/" "$s" attention_bench_old
      sustained "new $row" "^BM_AttnForward/$row/" "$s" attention_bench
    done
  done
}
