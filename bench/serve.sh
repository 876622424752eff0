#!/usr/bin/env bash
# The service benchmark: `hourglass serve` against its floor (bench/serve_floor.cc: the same HTTP
# stack answering after one raw memcached round trip with the same increments), both on one
# memcached on loopback, driven by wrk with features drawn from the real log and the policy
# 2/s, 5/m, 10/h, 100/d. Writes bench/results/serve.md.
#   bash bench/serve.sh          (HOURGLASS_BENCH_SECONDS=10 by default; ROUNDS=2; THREADS=nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-10}"
rounds="${ROUNDS:-2}"
threads="${THREADS:-$(nproc)}"  # server threads, both servers; the service's default
out=bench/results/serve.md
tmp="$(mktemp -d /tmp/hourglass-serve-bench-XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
mc=$(free_port)
memcached -u "$(id -un)" -l 127.0.0.1 -p "$mc" -U 0 -t 2 -m 1024 &
pids+=($!)
limits="${LIMITS:-2/s, 5/m, 10/h, 100/d}"
printf 'events:\n  url_shorten:\n    limits: [%s]\n' "$limits" >"$tmp/policy.yaml"
serve_port=$(free_port)
"$build/cli/hourglass" serve --policy "$tmp/policy.yaml" --servers "127.0.0.1:$mc" \
  --listen "127.0.0.1:$serve_port" --threads "$threads" 2>"$tmp/serve.log" &
serve_pid=$!
pids+=($serve_pid)
floor_port=$(free_port)
"$build/bench/serve_floor" --listen-port "$floor_port" --servers "127.0.0.1:$mc" --threads "$threads" \
  2>"$tmp/floor.log" &
floor_pid=$!
pids+=($floor_pid)
sleep 1

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system, in clock ticks
hz=$(getconf CLK_TCK)
# run NAME PORT PID CONNECTIONS THREADS: one wrk run; prints a table row.
run() {
  local before after result
  before=$(ticks "$3")
  result=$(wrk -t"$5" -c"$4" -d"${seconds}s" --latency -s bench/wrk/check.lua \
    "http://127.0.0.1:$2" -- "$log" | tail -1)
  after=$(ticks "$3")
  python3 - "$1" "$4" "$result" "$before" "$after" "$hz" <<'PY'
import json, sys
name, conns, result, before, after, hz = sys.argv[1:]
r = json.loads(result)
cpu_us = (int(after) - int(before)) / int(hz) * 1e6 / max(r["requests"], 1)
print(f"| {name} | {conns} | {r['rps']:,.0f} | {r['p50_us']} | {r['p99_us']} | "
      f"{cpu_us:.1f} | {r['non_2xx']} | {r['socket_errors']} |")
PY
}
{
  echo "# hourglass serve against its floor"
  echo
  echo "\`bash bench/serve.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "wrk, memcached, the service and the floor share the cores (loopback). ${seconds} s per run,"
  echo "runs alternate floor and service, ${rounds} rounds, ${threads} server threads each. Features: the client addresses of the"
  echo "real log at random; policy ${limits} (non-2xx: the 429 denials)."
  echo "CPU: the server process's user + system time per request."
  echo
  echo "| server | connections | requests/s | p50 µs | p99 µs | CPU µs/request | non-2xx | socket errors |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  for round in $(seq "$rounds"); do
    run floor "$floor_port" "$floor_pid" 64 2
    run serve "$serve_port" "$serve_pid" 64 2
    run floor "$floor_port" "$floor_pid" 1 1
    run serve "$serve_port" "$serve_pid" 1 1
  done
} | tee "$out"
