#!/usr/bin/env bash
# v0.6, second call: the persistent warp-specialised GEMM (scripts/device_persist.sh) and the TMA decode
# (scripts/device_decode.sh) in one device call. Carry tilejit_tests, gemm_bench, attention_bench.
B=${1:-.carry}
bash scripts/device_persist.sh "$B"
bash scripts/device_decode.sh "$B"
