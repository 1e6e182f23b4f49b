#!/usr/bin/env bash
# v0.11, third call: O rescaled before each P·V (fa3_keys_rescale_first), so the product stays in flight through the
# softmax. GPU tests of the persistent forward (rescale-first cases included) and of the store race (its 64x96 tile
# now takes 8 stages); then the persistent kernels as the library runs them and rescaled first, alternated.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*,gemm_store_race_gpu*'
R='BM_FlashFwdPersistent(EvenN|EvenNRF|RF|Padded|PaddedRF)?/D(64|96|128)/(full|causal)/128x128'
bench_rows rf1 "$B/attention_bench" "$R"
bench_rows rf2 "$B/attention_bench" "$R"
