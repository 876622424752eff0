#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds (as the main job does,
# warnings as errors: after `scripts/run.sh` there is nothing to rebuild), runs ctest.
# Tests that need memcached start their own on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh  # the main job's build, when it ran: nothing to rebuild
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600
