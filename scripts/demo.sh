#!/usr/bin/env bash
# The main job: build tilejit (Release) and run `tilejit demo`.
# On a GPU: vector add and softmax at >= 1 GiB, checked and timed against the
# device's copy bandwidth. Without one: the CPU interpreter plus NVRTC (sm_90a)
# and HIP (gfx942) compiles of every kernel. Installs its Debian dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DTILEJIT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target tilejit_tool
exec build/release/tools/tilejit demo "$@"
