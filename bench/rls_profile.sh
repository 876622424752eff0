#!/usr/bin/env bash
# Where a ShouldRateLimit request's time goes in `hourglass serve`: perf samples the service (call
# graphs, 999 Hz) while bench/rls_load drives it, 64 in flight, with the real log's addresses, in
# two mixes: every request admitted (one descriptor of 1000000/second: every one reaches
# memcached) and 2/s, 5/m, 10/h, 100/d as four descriptors. Writes bench/results/rls_profile.md:
# the share of the service's CPU per thread kind (gRPC's threads, the service's own), per library,
# and the top symbols, with the service's CPU per request, to choose each change from.
#   bash bench/rls_profile.sh   (needs perf: apt-get install linux-perf; SECONDS_PER_MIX=8)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${SECONDS_PER_MIX:-8}"
out=bench/results/rls_profile.md
command -v perf >/dev/null || { echo "rls_profile.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
tmp="$(mktemp -d /tmp/hourglass-rls-profile-XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
mc=$(free_port)
memcached -u "$(id -un)" -l 127.0.0.1 -p "$mc" -U 0 -t 2 -m 1024 &
pids+=($!)
limit() { printf '  - key: %s\n    rate_limit:\n      unit: %s\n      requests_per_unit: %s\n' "$@"; }
{
  printf 'domain: admit\ndescriptors:\n%s\n' "$(limit remote_address second 1000000)"
} >"$tmp/admit.yaml"
{
  printf 'domain: four\ndescriptors:\n'
  limit per_second second 2; limit per_minute minute 5; limit per_hour hour 10; limit per_day day 100
} >"$tmp/four.yaml"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# report DATA N SORT...: the first N lines of perf's report with a share, read whole (under
# pipefail, a reader that stops early would fail perf with SIGPIPE).
report() {
  local data=$1 max=$2
  shift 2
  perf report -i "$data" --no-children --stdio -g none "$@" 2>/dev/null >"$tmp/report.txt" || true
  awk -v max="$max" '/%/ && n++ < max' "$tmp/report.txt"
}
hz=$(getconf CLK_TCK)
# profile MIX KEYS: one service, one perf record, one report section.
profile() {
  local mix=$1 keys=$2 grpc before after result
  grpc=$(free_port)
  "$build/cli/hourglass" serve --envoy-config "$tmp/$mix.yaml" --servers "127.0.0.1:$mc" \
    --namespace "$mix" --listen "127.0.0.1:$(free_port)" --grpc-listen "127.0.0.1:$grpc" \
    --threads "$(nproc)" 2>"$tmp/$mix.log" &
  local pid=$!
  pids+=($pid)
  sleep 1
  # shellcheck disable=SC2086
  "$build/bench/rls_load" --target "127.0.0.1:$grpc" --domain "$mix" $keys --log "$log" \
    --concurrency 64 --seconds 2 >/dev/null  # warm: connections, caches
  perf record -q -F 999 -g -p "$pid" -o "$tmp/$mix.data" -- sleep "$seconds" 2>/dev/null &
  local perf_pid=$!
  before=$(ticks "$pid")
  # shellcheck disable=SC2086
  result=$("$build/bench/rls_load" --target "127.0.0.1:$grpc" --domain "$mix" $keys --log "$log" \
    --concurrency 64 --seconds "$seconds")
  after=$(ticks "$pid")
  wait "$perf_pid" || true
  kill "$pid"
  python3 - "$mix" "$result" "$before" "$after" "$hz" <<'PY'
import json, sys
mix, result, before, after, hz = sys.argv[1:6]
r = json.loads(result)
cpu = (int(after) - int(before)) / int(hz) * 1e6 / max(r["requests"], 1)
print(f"## {mix}\n\n{r['rps']:,.0f} requests/s, p50 {r['p50_us']} µs, p99 {r['p99_us']} µs, "
      f"{r['over_limit']} over the limit; the service's CPU {cpu:.1f} µs per request.\n")
PY
  echo "Share of the service's samples per thread (gRPC names its own: nexting_thread, default-executo):"
  echo
  echo '```'
  report "$tmp/$mix.data" 8 --sort comm
  echo '```'
  echo
  echo "Per library:"
  echo
  echo '```'
  report "$tmp/$mix.data" 10 --sort dso
  echo '```'
  echo
  echo "Top symbols:"
  echo
  echo '```'
  report "$tmp/$mix.data" 25 --sort dso,sym | cut -c1-140
  echo '```'
  echo
}
{
  echo "# Where a ShouldRateLimit request's time goes"
  echo
  echo "\`bash bench/rls_profile.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "perf (999 Hz, call graphs) on \`hourglass serve\` while bench/rls_load drives it, 64 in flight,"
  echo "${seconds} s, the real log's addresses; the driver and memcached share the cores."
  echo
  profile admit "--key remote_address"
  profile four "--key per_second --key per_minute --key per_hour --key per_day"
} >"$out"
echo "wrote $out" >&2
