#!/usr/bin/env bash
# The service benchmark: `hourglass serve` against its floor (bench/serve_floor.cc: the same HTTP
# stack answering after one raw memcached round trip with the same increments), all on one
# memcached on loopback, driven by wrk with features drawn from the real log. Two mixes:
#   - "policy": 2/s, 5/m, 10/h, 100/d, the issue's policy (at this rate most checks are denials,
#     many answered by the blocked-client cache without a round trip);
#   - "admit-all": 1000000/s, 100000000/d, every check admitted, so every one reaches memcached.
# Writes bench/results/serve.md.
#   bash bench/serve.sh   (HOURGLASS_BENCH_SECONDS=10 by default; ROUNDS=2; THREADS=nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-10}"
rounds="${ROUNDS:-2}"
threads="${THREADS:-$(nproc)}"  # server threads, every server; the service's default
out=bench/results/serve.md
source bench/lib.sh
bench_scratch serve-bench
bench_memcached 1024
declare -A port pid
# serve NAME LIMITS: one `hourglass serve` with that policy, in its own namespace.
serve() {
  printf 'events:\n  url_shorten:\n    limits: [%s]\n' "$2" >"$tmp/$1.yaml"
  port[$1]=$(free_port)
  "$build/cli/hourglass" serve --policy "$tmp/$1.yaml" --servers "127.0.0.1:$mc" \
    --namespace "$1" --listen "127.0.0.1:${port[$1]}" --threads "$threads" 2>"$tmp/$1.log" &
  pid[$1]=$!
  pids+=(${pid[$1]})
}
serve policy "2/s, 5/m, 10/h, 100/d"
serve admit-all "1000000/s, 100000000/d"
port[floor]=$(free_port)
"$build/bench/serve_floor" --listen-port "${port[floor]}" --servers "127.0.0.1:$mc" \
  --threads "$threads" 2>"$tmp/floor.log" &
pid[floor]=$!
pids+=(${pid[floor]})
sleep 1

# batched NAME: "batches checks" so far, from the service's metrics ("- -" for the floor).
batched() {
  if [ "$1" = floor ]; then echo "- -"; return; fi
  curl -s "127.0.0.1:${port[$1]}/metrics" |
    awk '/^hourglass_check_batches_total/ {b=$2} /^hourglass_batched_checks_total/ {c=$2}
         END {printf "%d %d\n", b, c}'
}
# run NAME CONNECTIONS WRK_THREADS: one wrk run; prints a table row.
run() {
  local before after result b0 b1
  before=$(ticks "${pid[$1]}")
  b0=$(batched "$1")
  result=$(wrk -t"$3" -c"$2" -d"${seconds}s" --latency -s bench/wrk/check.lua \
    "http://127.0.0.1:${port[$1]}" -- "$log" | tail -1)
  after=$(ticks "${pid[$1]}")
  b1=$(batched "$1")
  python3 - "$1" "$2" "$result" "$before" "$after" "$hz" "$b0" "$b1" <<'PY'
import json, sys
name, conns, result, before, after, hz = sys.argv[1:7]
b0, b1 = sys.argv[7].split(), sys.argv[8].split()
r = json.loads(result)
cpu_us = (int(after) - int(before)) / int(hz) * 1e6 / max(r["requests"], 1)
batch = "-"
if b0[0] != "-" and int(b1[0]) > int(b0[0]):
    batch = f"{(int(b1[1]) - int(b0[1])) / (int(b1[0]) - int(b0[0])):.1f}"
print(f"| {name} | {conns} | {r['rps']:,.0f} | {r['p50_us']} | {r['p99_us']} | "
      f"{cpu_us:.1f} | {batch} | {r['non_2xx']} | {r['socket_errors']} |")
PY
}
{
  echo "# hourglass serve against its floor"
  echo
  echo "\`bash bench/serve.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "wrk, memcached, the services and the floor share the cores (loopback). ${seconds} s per run;"
  echo "runs alternate floor, policy, admit-all; ${rounds} rounds; ${threads} server threads each."
  echo "Features: the client addresses of the real log at random. policy: 2/s, 5/m, 10/h, 100/d"
  echo "(non-2xx: the 429 denials); admit-all: 1000000/s, 100000000/d (every check reaches memcached)."
  echo "CPU: the server process's user + system time per request. Checks/batch: checks sent to"
  echo "memcached per batch (the service's metrics; local denials are not sent)."
  echo
  echo "| server | connections | requests/s | p50 µs | p99 µs | CPU µs/request | checks/batch | non-2xx | socket errors |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for round in $(seq "$rounds"); do
    for name in floor policy admit-all; do run "$name" 64 2; done
    for name in floor policy admit-all; do run "$name" 1 1; done
  done
} | tee "$out"
