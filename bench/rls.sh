#!/usr/bin/env bash
# The Envoy rate limit benchmark: ShouldRateLimit (gRPC, driven by bench/rls_load.cc, a client
# built from the upstream definitions) next to POST /v1/check (wrk) on the same `hourglass serve`,
# and the HTTP benchmark's floor server (bench/serve_floor.cc), all on one memcached on loopback,
# with the client addresses of the real log as the counted values. Two mixes:
#   - "policy": 2/s, 5/m, 10/h, 100/d. /v1/check asks one check with four limits; an Envoy
#     configuration holds one limit per descriptor, so ShouldRateLimit asks four descriptors
#     (per_second, per_minute, per_hour, per_day) with the same address: four checks;
#   - "policy-one": the same policy as one descriptor with hourglass's `rate_limits` (four
#     limits on one descriptor): one check, as /v1/check's (gRPC only);
#   - "admit-all": /v1/check 1000000/s, 100000000/d; ShouldRateLimit one descriptor of
#     1000000/second. Every check is admitted and reaches memcached.
# Writes bench/results/rls.md.
#   bash bench/rls.sh   (HOURGLASS_BENCH_SECONDS=10 by default; ROUNDS=2; THREADS=nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-10}"
rounds="${ROUNDS:-2}"
threads="${THREADS:-$(nproc)}"
out=bench/results/rls.md
tmp="$(mktemp -d /tmp/hourglass-rls-bench-XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
mc=$(free_port)
memcached -u "$(id -un)" -l 127.0.0.1 -p "$mc" -U 0 -t 2 -m 1024 &
pids+=($!)
declare -A port grpc pid
# serve NAME LIMITS ENVOY_DESCRIPTORS: one `hourglass serve` in its own namespace.
serve() {
  printf 'events:\n  url_shorten:\n    limits: [%s]\n' "$2" >"$tmp/$1.yaml"
  printf 'domain: bench\ndescriptors:\n%s' "$3" >"$tmp/$1-envoy.yaml"
  port[$1]=$(free_port)
  grpc[$1]=$(free_port)
  "$build/cli/hourglass" serve --policy "$tmp/$1.yaml" --envoy-config "$tmp/$1-envoy.yaml" \
    --servers "127.0.0.1:$mc" --namespace "$1" --listen "127.0.0.1:${port[$1]}" \
    --grpc-listen "127.0.0.1:${grpc[$1]}" --threads "$threads" 2>"$tmp/$1.log" &
  pid[$1]=$!
  pids+=(${pid[$1]})
}
limit() { printf '  - key: %s\n    rate_limit:\n      unit: %s\n      requests_per_unit: %s\n' "$@"; }
serve policy "2/s, 5/m, 10/h, 100/d" \
  "$(limit per_second second 2; limit per_minute minute 5; limit per_hour hour 10; limit per_day day 100)"
serve policy-one "2/s, 5/m, 10/h, 100/d" "$(printf '  - key: client\n    rate_limits:\n'
  for spec in "second 2" "minute 5" "hour 10" "day 100"; do
    set -- $spec
    printf '      - {unit: %s, requests_per_unit: %s}\n' "$1" "$2"
  done)"
serve admit-all "1000000/s, 100000000/d" "$(limit client second 1000000)"
port[floor]=$(free_port)
"$build/bench/serve_floor" --listen-port "${port[floor]}" --servers "127.0.0.1:$mc" \
  --threads "$threads" 2>"$tmp/floor.log" &
pid[floor]=$!
pids+=(${pid[floor]})
sleep 1

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system, in clock ticks
hz=$(getconf CLK_TCK)
# run SERVER PATH CONNECTIONS: one run of wrk (/v1/check) or rls_load (grpc); a table row.
run() {
  local server=$1 path=$2 conns=$3 before after result keys
  before=$(ticks "${pid[$server]}")
  if [ "$path" = grpc ]; then
    if [ "$server" = policy ]; then keys="--key per_second --key per_minute --key per_hour --key per_day"
    else keys="--key client"; fi
    # shellcheck disable=SC2086
    result=$("$build/bench/rls_load" --target "127.0.0.1:${grpc[$server]}" --domain bench $keys \
      --log "$log" --concurrency "$conns" --seconds "$seconds")
  else
    result=$(wrk -t"$([ "$conns" = 1 ] && echo 1 || echo 2)" -c"$conns" -d"${seconds}s" --latency \
      -s bench/wrk/check.lua "http://127.0.0.1:${port[$server]}" -- "$log" | tail -1)
  fi
  after=$(ticks "${pid[$server]}")
  python3 - "$server" "$path" "$conns" "$result" "$before" "$after" "$hz" <<'PY'
import json, sys
server, path, conns, result, before, after, hz = sys.argv[1:8]
r = json.loads(result)
cpu_us = (int(after) - int(before)) / int(hz) * 1e6 / max(r["requests"], 1)
denied = r.get("over_limit", r.get("non_2xx"))
errors = r.get("errors", r.get("socket_errors"))
print(f"| {server} | {path} | {conns} | {r['rps']:,.0f} | {r['p50_us']} | {r['p99_us']} | "
      f"{cpu_us:.1f} | {denied} | {errors} |")
PY
}
{
  echo "# ShouldRateLimit next to /v1/check and the floor"
  echo
  echo "\`bash bench/rls.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "the drivers (wrk for HTTP, bench/rls_load for gRPC: one channel, N requests in flight),"
  echo "memcached and the servers share the cores (loopback). ${seconds} s per run; ${rounds} rounds;"
  echo "${threads} server threads each. Values: the client addresses of the real log at random."
  echo "policy: 2/s, 5/m, 10/h, 100/d (/v1/check: one check of four limits; grpc: four descriptors"
  echo "of one limit each, four checks); policy-one: grpc, the policy as one descriptor with four"
  echo "limits (rate_limits), one check; admit-all: every check admitted, every one reaches memcached."
  echo "CPU: the server process's user + system time per request. Denied: 429s or OVER_LIMIT."
  echo
  echo "| server | path | in flight | requests/s | p50 µs | p99 µs | CPU µs/request | denied | errors |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for round in $(seq "$rounds"); do
    for conns in 64 1; do
      run floor http "$conns"
      for mix in policy admit-all; do
        run "$mix" http "$conns"
        run "$mix" grpc "$conns"
      done
      run policy-one grpc "$conns"
    done
  done
} | tee "$out"
