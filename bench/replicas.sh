#!/usr/bin/env bash
# What copies cost: `hourglass serve` on three memcached servers, one copy of each count against
# two (--replicas 2), the same traffic to each (wrk, POST /v1/check, client addresses of the real
# log, every check admitted so every one reaches memcached), runs alternating. Then the items and
# bytes the servers hold per feature for each, from memcached's own `stats` (each service writes
# its own namespace, one after the other on emptied servers).
# Writes bench/results/replicas.md.
#   bash bench/replicas.sh   (HOURGLASS_BENCH_SECONDS=8 by default; ROUNDS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-8}"
rounds="${ROUNDS:-2}"
out=bench/results/replicas.md
source bench/lib.sh
bench_scratch replicas-bench
mc=()
for i in 0 1 2; do
  mc[i]=$(free_port)
  memcached -u "$(id -un)" -l 127.0.0.1 -p "${mc[i]}" -U 0 -t 1 -m 512 &
  pids+=($!)
done
servers="127.0.0.1:${mc[0]},127.0.0.1:${mc[1]},127.0.0.1:${mc[2]}"
printf 'events:\n  url_shorten:\n    limits: [1000000/s, 100000000/d]\n' >"$tmp/policy.yaml"
declare -A port
serve() {  # serve NAME REPLICAS
  port[$1]=$(free_port)
  "$build/cli/hourglass" serve --policy "$tmp/policy.yaml" --servers "$servers" --replicas "$2" \
    --namespace "$1" --listen "127.0.0.1:${port[$1]}" --stats-interval 0 2>"$tmp/$1.log" &
  pids+=($!)
}
serve one 1
serve two 2
sleep 1
run() {  # run NAME: one wrk run, a table row
  local result
  result=$(wrk -t2 -c64 -d"${seconds}s" --latency -s bench/wrk/check.lua \
    "http://127.0.0.1:${port[$1]}" -- "$log" | tail -1)
  python3 - "$1" "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[2])
print(f"| {sys.argv[1]} | {r['rps']:,.0f} | {r['p50_us']} | {r['p99_us']} | {r['non_2xx']} | "
      f"{r['socket_errors']} |")
PY
}
stat() {  # stat FIELD: the sum over the three servers
  local total=0 v
  for p in "${mc[@]}"; do
    v=$(printf 'stats\r\nquit\r\n' | nc -q1 127.0.0.1 "$p" | awk -v f="$1" '$2 == f {print $3}' | tr -d '\r')
    total=$((total + v))
  done
  echo "$total"
}
flush() { for p in "${mc[@]}"; do printf 'flush_all\r\nquit\r\n' | nc -q1 127.0.0.1 "$p" >/dev/null; done; }
features=2000
memory() {  # memory NAME: items and bytes per feature after $features features, 5 hits each
  flush
  sleep 1.1  # flush_all takes effect in the next second
  local items0 bytes0
  items0=$(stat curr_items)
  bytes0=$(stat bytes)
  for f in $(seq "$features"); do
    for _ in 1 2 3 4 5; do echo "{\"event\":\"url_shorten\",\"feature\":\"f$f\"}"; done
  done | python3 -c '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for line in sys.stdin:
    c.request("POST", "/v1/check", line.strip(), {"Content-Type": "application/json"})
    c.getresponse().read()
' "${port[$1]}"
  python3 -c "import sys; i, b = int(sys.argv[1]), int(sys.argv[2]); n = int(sys.argv[3]); print(f'| {sys.argv[4]} | {i / n:.2f} | {b / n:.0f} |')" \
    "$(($(stat curr_items) - items0))" "$(($(stat bytes) - bytes0))" "$features" "$1"
}
{
  echo "# What copies cost"
  echo
  echo "\`bash bench/replicas.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "\`hourglass serve\` on three memcached servers (loopback), \`--replicas 1\` (one) against"
  echo "\`--replicas 2\` (two), wrk 64 connections, ${seconds} s per run, runs alternating, ${rounds} rounds;"
  echo "every check admitted (1000000/s, 100000000/d), so every one reaches memcached."
  echo
  echo "| copies | requests/s | p50 µs | p99 µs | non-2xx | socket errors |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for _ in $(seq "$rounds"); do run one; run two; done
  echo
  echo "Items and bytes the three servers hold per feature ($features features, 5 checks each, the"
  echo "packed layout), from memcached's \`stats\`:"
  echo
  echo "| copies | items per feature | bytes per feature |"
  echo "| --- | --- | --- |"
  memory one
  memory two
} | tee "$out"
