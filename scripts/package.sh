#!/usr/bin/env bash
# Builds the Debian package (build/hourglass_VERSION_ARCH.deb): the binary, its manual page, the
# systemd unit, /etc/default/hourglass and the default policy. Reuses the main build (./build):
# turning the package on adds install rules and the manual page, and recompiles nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DHOURGLASS_PACKAGE=ON
cd build
cpack -G DEB >/dev/null
ls "$PWD"/hourglass_*.deb
