#!/usr/bin/env bash
# v0.10, second call: the schedule table's entry loaded one item ahead (a scalar the item loop carries, which the
# producer warp group now repeats). GPU tests of the persistent forward (kernel and library, one object across
# shapes), block-sparse producer loads; then the previous commit's rows (attention_bench_old: round robin) and this
# one's, alternated, with torch SDPA between. Carry tilejit_tests, attention_bench, attention_bench_old, libraries.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*,producer_loads*gpu*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*'
ab_rounds 'BM_FlashFwdPersistent/D(64|96|128)/|BM_AttnForward/' 'BM_FlashFwdPersistent(Padded)?/D(64|96|128)/|BM_AttnForward(per_item)?/'
