#!/usr/bin/env bash
# The plain test suite, several times in a row on a busy machine: as many busy loops as there
# are cores run beside `ctest -j<cores>` the whole time. A test that fails here and passes alone
# depends on timing, or has found a bug that timing exposes: fix it, never retry it or wait longer.
#
#   bash scripts/test-under-load.sh              # 5 runs of the whole suite in ./build
#   RUNS=20 bash scripts/test-under-load.sh -R ConcurrentExactness   # extra arguments go to ctest
#
# Builds first (scripts/build.sh). Each run's failures are listed, and its log kept in
# build/under-load/run-N.log; exits 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}"
scripts/install-deps.sh
scripts/build.sh
out=build/under-load
mkdir -p "$out"
cores=$(nproc)
loops=()
stop_loops() { for pid in "${loops[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_loops EXIT
trap 'exit 130' INT TERM  # stopped from outside: the EXIT trap still stops the loops
for _ in $(seq "$cores"); do
  (while :; do :; done) &
  loops+=($!)
done
failed_runs=0
for run in $(seq "$runs"); do
  start=$SECONDS
  if (cd build && ctest --output-on-failure -j"$cores" --timeout 600 "$@") >"$out/run-$run.log" 2>&1; then
    echo "under load: run $run of $runs passed in $((SECONDS - start)) s"
  else
    failed_runs=$((failed_runs + 1))
    echo "under load: run $run of $runs failed in $((SECONDS - start)) s:"
    grep -E '^\s+[0-9]+ - ' "$out/run-$run.log" || tail -5 "$out/run-$run.log"
  fi
done
if ((failed_runs > 0)); then
  echo "under load: $failed_runs of $runs runs failed (logs in $out/)" >&2
  exit 1
fi
echo "under load: $runs of $runs runs passed"
