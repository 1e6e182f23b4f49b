#!/usr/bin/env bash
# Build and run every test: the doctest suites (warnings as errors), the
# compile-fail tests, the layout tests under AddressSanitizer + UBSan, and a
# consumer project built against an installed tilejit (find_package).
# GPU tests skip cleanly without a GPU. Installs its Debian dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build/ci -DCMAKE_BUILD_TYPE=Release -DTILEJIT_WERROR=ON -DCMAKE_INSTALL_PREFIX="$PWD/build/ci-prefix"
cmake --build build/ci -j"$jobs"
(cd build/ci && ctest --output-on-failure -j"$jobs")
# The layout layer under sanitizers (it is header-only, constexpr, and needs no GPU).
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DTILEJIT_SANITIZE=ON -DTILEJIT_BUILD_TOOLS=OFF -DTILEJIT_BUILD_BENCH=OFF
cmake --build build/asan -j"$jobs" --target tilejit_layout_tests
UBSAN_OPTIONS=halt_on_error=1 build/asan/test/tilejit_layout_tests
# Install, then build and run a consumer through find_package(tilejit).
cmake --install build/ci >/dev/null
cmake -S test/package -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/ci-prefix"
cmake --build build/consumer -j"$jobs"
build/consumer/consumer
echo "all tests passed"
