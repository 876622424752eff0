#!/usr/bin/env bash
# Starts memcached, `hourglass serve` and nginx on free loopback ports, all under a scratch
# directory, and prints nginx's address; stops them all on exit (Ctrl-C).
#
#   bash examples/nginx/run.sh BUILD_DIR            # then: curl -i http://127.0.0.1:PORT/shorten
#   bash examples/nginx/run.sh BUILD_DIR -- CMD...  # runs CMD with $NGINX_URL and $HOURGLASS_PID
#                                                    # set, then stops
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: run.sh BUILD_DIR [-- CMD...]}" && pwd)"
shift
[[ "${1:-}" == "--" ]] && shift

source "$here/../../scripts/memcached.sh"
prefix="$(mktemp -d /tmp/hourglass-nginx-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$prefix"
}
trap cleanup EXIT

start_memcached 64 >/dev/null
pids+=("$MEMCACHED_PID")
memcached_port="${MEMCACHED_ADDRESS##*:}"
hourglass_port="$(free_port)"
"$build/cli/hourglass" serve --policy "$here/policy.yaml" \
  --listen "127.0.0.1:$hourglass_port" --servers "127.0.0.1:$memcached_port" \
  2>"$prefix/hourglass.log" &
pids+=($!)
export HOURGLASS_PID=$!
nginx_port="$(free_port)"
mkdir -p "$prefix/html" "$prefix/tmp"
chmod 755 "$prefix" "$prefix/html"  # nginx workers run as an unprivileged user when started as root
echo "shortened: https://sho.rt/abc123" >"$prefix/html/shorten.html"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@NGINX_PORT@|$nginx_port|g" \
  -e "s|@HOURGLASS_PORT@|$hourglass_port|g" "$here/nginx.conf.in" >"$prefix/nginx.conf"
/usr/sbin/nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
pids+=($!)

export NGINX_URL="http://127.0.0.1:$nginx_port"
for _ in $(seq 100); do  # until nginx and hourglass both answer
  if curl -fs "http://127.0.0.1:$hourglass_port/readyz" >/dev/null &&
    curl -s -o /dev/null "$NGINX_URL/"; then
    break
  fi
  sleep 0.1
done
if (($# > 0)); then
  "$@"
else
  echo "nginx on $NGINX_URL (try: curl -i $NGINX_URL/shorten); Ctrl-C stops everything"
  wait
fi
