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
source "$here/../../scripts/serve.sh"
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
start_serve "$prefix/hourglass.log" "$build/cli/hourglass" serve --policy "$here/policy.yaml" \
  --servers "127.0.0.1:$memcached_port"
pids+=("$SERVE_PID")
export HOURGLASS_PID=$SERVE_PID
hourglass_port=$SERVE_PORT
mkdir -p "$prefix/html" "$prefix/tmp"
chmod 755 "$prefix" "$prefix/html"  # nginx workers run as an unprivileged user when started as root
echo "shortened: https://sho.rt/abc123" >"$prefix/html/shorten.html"
echo "$prefix" >"$prefix/html/ready.txt"  # only our nginx serves this

# nginx on a free port (start_on_free_port), ours once it serves our ready.txt; on a port another
# server took meanwhile, ours exits and another port is tried.
nginx_start() {
  sed -e "s|@PREFIX@|$prefix|g" -e "s|@NGINX_PORT@|$1|g" \
    -e "s|@HOURGLASS_PORT@|$hourglass_port|g" "$here/nginx.conf.in" >"$prefix/nginx.conf"
  : >"$prefix/error.log"
  /usr/sbin/nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
  STARTED_PID=$!
  pids+=("$STARTED_PID")
}
nginx_ours() { [[ "$(curl -fs "http://127.0.0.1:$1/ready.txt")" == "$prefix" ]]; }
nginx_taken() { grep -q "Address already in use" "$prefix/error.log"; }
if ! start_on_free_port nginx_start nginx_ours nginx_taken; then
  echo "run.sh: nginx did not start:" >&2
  cat "$prefix/error.log" >&2
  exit 1
fi
nginx_port=$STARTED_PORT
export NGINX_URL="http://127.0.0.1:$nginx_port"
if (($# > 0)); then
  "$@"
else
  echo "nginx on $NGINX_URL (try: curl -i $NGINX_URL/shorten); Ctrl-C stops everything"
  wait
fi
