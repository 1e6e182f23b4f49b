#!/usr/bin/env bash
# review7: clusters refused where the programs of a cluster may diverge, item blocks in clusters. The new GPU test
# (item blocks + multicast ring in clusters of 2 with K loops of 0 and 16 iterations; rung 6 compiled with
# num_ctas = 2 on 4 programs with unequal tile counts, which hung before the fix), then the GPU tests of the kernels
# the change touches (rung 7, the persistent attention forward). Carry tilejit_tests. About 2 minutes.
. "$(dirname "$0")/device_common.sh" "$@"
run() {
  echo "== $1"
  timeout -k 5 "$2" "$B/tilejit_tests" -tc="$1" > "$OUT/t.txt" 2>&1; echo "rc $?"
  grep -E "ERROR|test cases|assertions|CRASH" "$OUT/t.txt" | head -8
}
run 'cluster_edges_gpu*' 60
run 'gemm_v7_gpu*,attention_persistent_gpu*' 150
