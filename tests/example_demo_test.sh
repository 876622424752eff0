#!/usr/bin/env bash
# Runs examples/shorten_url_demo against a real memcached on a free loopback port: ten simulated
# minutes under 2/s, 5/m, 10/h, 100/d, where the abusive client (3 requests every 2 s) must get
# exactly its 10 an hour through (10 of its 900).
#   example_demo_test.sh DEMO_BINARY SOURCE_DIR
set -euo pipefail
demo="$1"
source "$2/scripts/memcached.sh"
start_memcached >/dev/null
trap stop_memcached EXIT
out=$("$demo" "$MEMCACHED_ADDRESS")
echo "$out" | tail -12
echo "$out" | grep -Eq '^203\.0\.113\.7 \(abusive\) +10 +890$'
echo "abusive client: 10 allowed, 890 denied"
