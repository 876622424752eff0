#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs, against it, tests/consumer
# (the engine and stores only), tests/consumer/components (policy and json too),
# tests/consumer/service (the decision service as a library) and tests/consumer/rls (Envoy's rate
# limit service in process).
#   run.sh BUILD_DIR WORK_DIR
set -euo pipefail
build="$1"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
# The binary and the library; never the service package's files (/etc, systemd; see packaging/).
for component in runtime development; do
  cmake --install "$build" --prefix "$work/prefix" --component "$component" >/dev/null
done
test -x "$work/prefix/bin/hourglass"
test -f "$work/prefix/include/hourglass/engine.h"
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
cmake -S "$here/components" -B "$work/components" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/components" >/dev/null
"$work/components/components_consumer" "$here/../../policies/example.yaml"
cmake -S "$here/service" -B "$work/service" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/service" >/dev/null
"$work/service/service_consumer"
cmake -S "$here/rls" -B "$work/rls" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/rls" >/dev/null
"$work/rls/rls_consumer"
