# Sourced by the examples' tests: memcached and `hourglass serve` on free loopback ports, stopped
# by PID when the test exits.
#
#   source tests/support/example_services.sh
#   start_services "$build" "$source_dir/examples/x/policy.yaml"   # sets mc, hg, log
#
# Every process started with track_pid is killed on exit, and $log (the services' stderr) and
# every "$log".* file removed.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/memcached.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/serve.sh"
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
  start_serve "$log" "$build/cli/hourglass" serve --policy "$policy" \
    --servers "127.0.0.1:$mc" || return 1
  track_pid "$SERVE_PID"
  hg="$SERVE_PORT"
}
