#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the shorten-URL demonstration against
# memcached. Uses $HOURGLASS_SERVERS when set; otherwise starts a memcached on a free loopback
# port and stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
source scripts/memcached.sh
servers="${HOURGLASS_SERVERS:-}"
if [[ -z "$servers" ]]; then
  start_memcached
  trap stop_memcached EXIT
  servers="$MEMCACHED_ADDRESS"
fi
build/examples/shorten_url_demo "$servers"
