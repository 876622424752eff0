#!/usr/bin/env bash
# Where a request's time goes in `hourglass serve`, on both protocols: perf samples the service
# (call graphs, 999 Hz) while a driver loads it with the real log's addresses. Envoy's gRPC:
# bench/rls_load, 64 in flight, in two mixes: every request admitted (one descriptor of
# 1000000/second: every one reaches memcached) and 2/s, 5/m, 10/h, 100/d as four descriptors.
# The HTTP API: wrk, 64 connections, POST /v1/check under the policy 2/s, 5/m, 10/h, 100/d.
# Writes bench/results/rls_profile.md: the share of the service's CPU per thread kind (grpc-io,
# http-io, batcher, the others), per library, and the top symbols, with the service's CPU per
# request, to choose each change from.
#   bash bench/rls_profile.sh   (needs perf: apt-get install linux-perf, and wrk; SECONDS_PER_MIX=8)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${SECONDS_PER_MIX:-8}"
out=bench/results/rls_profile.md
command -v perf >/dev/null || { echo "rls_profile.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
threads="$(nproc)"
source bench/lib.sh
bench_scratch rls-profile
bench_memcached 1024
declare -A port grpc pid
{
  printf 'domain: admit\ndescriptors:\n%s\n' "$(envoy_limit remote_address second 1000000)"
} >"$tmp/admit.yaml"
{
  printf 'domain: four\ndescriptors:\n'
  envoy_limit per_second second 2; envoy_limit per_minute minute 5
  envoy_limit per_hour hour 10; envoy_limit per_day day 100
} >"$tmp/four.yaml"
# report DATA N SORT...: the first N lines of perf's report with a share, read whole (under
# pipefail, a reader that stops early would fail perf with SIGPIPE).
report() {
  local data=$1 max=$2
  shift 2
  perf report -i "$data" --no-children --stdio -g none "$@" 2>/dev/null >"$tmp/report.txt" || true
  awk -v max="$max" '/%/ && n++ < max' "$tmp/report.txt"
}
# sections DATA: the share of the samples per thread, per library, and the top symbols.
sections() {
  echo "Share of the service's samples per thread (grpc-io, http-io: the servers' I/O threads, hourglass: the main thread, one of HTTP's; batcher: the batches' senders):"
  echo
  echo '```'
  report "$1" 8 --sort comm
  echo '```'
  echo
  echo "Per library:"
  echo
  echo '```'
  report "$1" 10 --sort dso
  echo '```'
  echo
  echo "Top symbols:"
  echo
  echo '```'
  report "$1" 25 --sort dso,sym | cut -c1-140
  echo '```'
  echo
}
# profile_http: the HTTP API under wrk, one perf record, one report section.
profile_http() {
  local before after result
  printf 'events:\n  url_shorten:\n    limits: [2/s, 5/m, 10/h, 100/d]\n' >"$tmp/policy.yaml"
  bench_serve http --policy "$tmp/policy.yaml"
  local service=${pid[http]} url=http://127.0.0.1:${port[http]}
  sed "s/^/warm./" "$log" >"$tmp/warm.log"
  sed "s/^/profiled./" "$log" >"$tmp/profiled.log"  # clients of its own: none starts blocked
  sleep 1
  wrk -t2 -c64 -d2s -s bench/wrk/check.lua "$url" -- "$tmp/warm.log" >/dev/null
  perf record -q -F 999 -g -p "$service" -o "$tmp/http.data" -- sleep "$seconds" 2>/dev/null &
  local perf_pid=$!
  before=$(ticks "$service")
  result=$(wrk -t2 -c64 -d"${seconds}s" --latency -s bench/wrk/check.lua "$url" -- \
    "$tmp/profiled.log" | tail -1)
  after=$(ticks "$service")
  wait "$perf_pid" || true
  kill "$service"
  python3 - "$result" "$before" "$after" "$hz" <<'PY'
import json, sys
result, before, after, hz = sys.argv[1:5]
r = json.loads(result)
cpu = (int(after) - int(before)) / int(hz) * 1e6 / max(r["requests"], 1)
print(f"## http\n\nPOST /v1/check, 2/s, 5/m, 10/h, 100/d: {r['rps']:,.0f} requests/s, p50 {r['p50_us']} µs, "
      f"p99 {r['p99_us']} µs, {r['non_2xx']} denied; the service's CPU {cpu:.1f} µs per request.\n")
PY
  sections "$tmp/http.data"
}
# profile MIX KEYS: one service, one perf record, one report section.
profile() {
  local mix=$1 keys=$2 before after result
  bench_serve "$mix" --envoy-config "$tmp/$mix.yaml"
  local service=${pid[$mix]} target=127.0.0.1:${grpc[$mix]}
  sleep 1
  # shellcheck disable=SC2086
  "$build/bench/rls_load" --target "$target" --domain "$mix" $keys --log "$log" \
    --concurrency 64 --seconds 2 >/dev/null  # warm: connections, caches
  perf record -q -F 999 -g -p "$service" -o "$tmp/$mix.data" -- sleep "$seconds" 2>/dev/null &
  local perf_pid=$!
  before=$(ticks "$service")
  # shellcheck disable=SC2086
  result=$("$build/bench/rls_load" --target "$target" --domain "$mix" $keys --log "$log" \
    --concurrency 64 --seconds "$seconds")
  after=$(ticks "$service")
  wait "$perf_pid" || true
  kill "$service"
  python3 - "$mix" "$result" "$before" "$after" "$hz" <<'PY'
import json, sys
mix, result, before, after, hz = sys.argv[1:6]
r = json.loads(result)
cpu = (int(after) - int(before)) / int(hz) * 1e6 / max(r["requests"], 1)
print(f"## {mix}\n\n{r['rps']:,.0f} requests/s, p50 {r['p50_us']} µs, p99 {r['p99_us']} µs, "
      f"{r['over_limit']} over the limit; the service's CPU {cpu:.1f} µs per request.\n")
PY
  sections "$tmp/$mix.data"
}
{
  echo "# Where a request's time goes: Envoy's gRPC and the HTTP API"
  echo
  echo "\`bash bench/rls_profile.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "perf (999 Hz, call graphs) on \`hourglass serve\` while bench/rls_load (gRPC, 64 in flight) or"
  echo "wrk (HTTP, 64 connections) drives it, ${seconds} s, the real log's addresses; the driver and"
  echo "memcached share the cores."
  echo
  profile admit "--key remote_address"
  profile four "--key per_second --key per_minute --key per_hour --key per_day"
  profile_http
} >"$out"
echo "wrote $out" >&2
