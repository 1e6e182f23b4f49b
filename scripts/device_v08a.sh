#!/usr/bin/env bash
# v0.8 call 1: the two scripts built after v0.7's device time (review7: cluster refusal; tmastore: the TMA-store
# epilogue), then compute-sanitizer memcheck and racecheck on the TMA-store GPU test. Carry tilejit_tests, gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
D=$(dirname "$0")
bash "$D/device_review7.sh" "$B"
bash "$D/device_tmastore.sh" "$B"
for tool in memcheck racecheck synccheck; do
  echo "== $tool gemm_v6_store_gpu"
  timeout -k 5 90 /usr/local/cuda/bin/compute-sanitizer --tool $tool "$B/tilejit_tests" -tc='gemm_v6_store_gpu*' 2>&1 | tail -2
done
