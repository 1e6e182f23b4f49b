# Sourced by the scripts/device_*.sh scripts, first thing: B = the folder of carried binaries and shared
# libraries ($1, default .carry), OUT = where results go (the device tool's $OUT), the kernel cache and library
# path, and one line naming the GPU and its driver.
set -u
B=${1:-.carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=/tmp/tj-cache LD_LIBRARY_PATH=$PWD/$B
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
