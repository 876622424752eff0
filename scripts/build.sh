#!/usr/bin/env bash
# Configures and builds hourglass into ./build. Extra arguments go to cmake's configure step.
# HOURGLASS_WERROR=ON (CI sets it) turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOURGLASS_WERROR="${HOURGLASS_WERROR:-OFF}" "$@" >/dev/null
cmake --build build -j"$(nproc)"
