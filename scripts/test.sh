#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as errors, runs ctest.
# Tests that need memcached start their own on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
HOURGLASS_WERROR=ON scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600
