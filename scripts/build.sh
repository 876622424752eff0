#!/usr/bin/env bash
# Configures and builds hourglass into ./build. Extra arguments go to cmake's configure step.
# Warnings are errors (Debian 12's GCC gives none); HOURGLASS_WERROR=OFF for another compiler.
# The main job and the test suite build with the same flags, so the second finds nothing to do.
# Ninja, ccache and mold are used when installed (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cmake.sh
hourglass_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOURGLASS_WERROR="${HOURGLASS_WERROR:-ON}" "$@"
cmake --build build -j"$(nproc)"
