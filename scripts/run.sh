#!/usr/bin/env bash
# The main job: installs what is missing, builds, then shows hourglass on real data with its CLI:
# replays ../shared/data/apache_access_2015.log (10,000 real requests) against the example
# policy, then inspects the busiest client at its last request.
# Uses $HOURGLASS_STORE and $HOURGLASS_SERVERS when set (under a fresh namespace): e.g.
#   HOURGLASS_STORE=lmdb:///tmp/hourglass-demo bash scripts/run.sh   (a file, no server)
#   HOURGLASS_STORE=redis HOURGLASS_SERVERS=127.0.0.1:6379 bash scripts/run.sh
# otherwise starts a memcached on a free loopback port and stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
source scripts/memcached.sh
namespace="demo"
if [[ -n "${HOURGLASS_STORE:-}" && "${HOURGLASS_STORE}" != memcached ]]; then
  namespace="demo-$(date +%s)"
elif [[ -z "${HOURGLASS_SERVERS:-}" ]]; then
  start_memcached
  trap stop_memcached EXIT
  export HOURGLASS_SERVERS="$MEMCACHED_ADDRESS"
else
  namespace="demo-$(date +%s)"
fi
log="${1:-../shared/data/apache_access_2015.log}"
hourglass=build/cli/hourglass
echo "\$ hourglass replay $log --format apache --policy policies/example.yaml"
summary=$("$hourglass" --namespace "$namespace" replay "$log" --format apache \
  --policy policies/example.yaml)
echo "$summary"
# "busiest: EVENT FEATURE (N hits, last at UNIX_SECONDS)"
read -r event feature last_at < <(echo "$summary" |
  awk '/^busiest:/ { gsub(/\)/, "", $NF); print $2, $3, $NF }')
echo
echo "\$ hourglass inspect $event $feature --at $last_at"
"$hourglass" --namespace "$namespace" inspect "$event" "$feature" --at "$last_at"
echo
echo "\$ hourglass check $event $feature --policy policies/example.yaml --at $last_at"
"$hourglass" --namespace "$namespace" check "$event" "$feature" --policy policies/example.yaml \
  --at "$last_at" || true
