# Sourced by the examples' tests: memcached and `hourglass serve` on free loopback ports, stopped
# by PID when the test exits.
#
#   source tests/support/example_services.sh
#   start_services "$build" "$source_dir/examples/x/policy.yaml"   # sets mc, hg, log
#
# Every process started with track_pid is killed on exit, and $log (the services' stderr) and
# every "$log".* file removed.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/memcached.sh"
pids=()
log="$(mktemp /tmp/hourglass-example-XXXXXX)"
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -f "$log" "$log".*' EXIT
track_pid() { pids+=("$1"); }
# memcached and `hourglass serve --policy POLICY` on free ports (mc, hg), the service ready.
start_services() {
  local build="$1" policy="$2"
  start_memcached >/dev/null
  track_pid "$MEMCACHED_PID"
  mc="${MEMCACHED_ADDRESS##*:}"
  hg="$(free_port)"
  "$build/cli/hourglass" serve --policy "$policy" --listen "127.0.0.1:$hg" \
    --servers "127.0.0.1:$mc" 2>>"$log" &
  track_pid $!
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$hg/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "hourglass serve did not become ready: $(cat "$log")"
  return 1
}
