#!/usr/bin/env bash
# Two builds of `hourglass serve` on Envoy's protocol, side by side on one memcached: the same
# driver (bench/rls_load, 64 in flight) against each in turn, alternated, so that a change is
# judged by a ratio measured in one run on this noisy machine. Four services per build: one
# descriptor remote_address 5/minute with the real log's addresses (mix), the same for one
# client (one), 1000000/second (admit: every request reaches memcached), and 2/s, 5/m, 10/h,
# 100/d as four descriptors of the log's addresses (four); and the HTTP API (http: wrk, 64
# connections, POST /v1/check of the log's addresses under 2/s, 5/m, 10/h, 100/d). Prints a line
# per run (round, server, requests/s, p99 µs, the server's CPU µs per request, admitted), then
# per mix the median over rounds of new/old in the same round.
#   OLD=path/to/hourglass NEW=path/to/hourglass bash bench/rls_ab.sh
#   (HOURGLASS_BENCH_SECONDS=8 by default; ROUNDS=3; MIXES="mix one admit four http")
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
seconds="${HOURGLASS_BENCH_SECONDS:-8}"
rounds="${ROUNDS:-3}"
mixes="${MIXES:-mix one admit four http}"
threads="${THREADS:-$(nproc)}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
: "${OLD:?OLD=path of the hourglass binary to compare against}"
: "${NEW:?NEW=path of the hourglass binary to judge}"
source bench/lib.sh
source scripts/serve.sh
bench_scratch rls-ab
bench_memcached 1024
declare -A port grpc pid
# start NAME BINARY DESCRIPTORS: one `hourglass serve` of BINARY in namespace NAME.
start() {
  printf 'domain: ab\ndescriptors:\n%s\n' "$3" >"$tmp/$1-envoy.yaml"
  hourglass=$2 bench_serve "$1" --envoy-config "$tmp/$1-envoy.yaml"
}
for v in old new; do
  binary=$OLD
  [ "$v" = new ] && binary=$NEW
  start "$v-mix" "$binary" "$(envoy_limit remote_address minute 5)"
  start "$v-one" "$binary" "$(envoy_limit remote_address minute 5)"
  start "$v-admit" "$binary" "$(envoy_limit remote_address second 1000000)"
  start "$v-four" "$binary" "$(envoy_four_descriptors)"
  printf 'events:\n  url_shorten:\n    limits: [2/s, 5/m, 10/h, 100/d]\n' >"$tmp/$v-http.yaml"
  hourglass=$binary bench_serve "$v-http" --policy "$tmp/$v-http.yaml"
done
for name in "${!pid[@]}"; do
  for _ in $(seq 100); do
    serve_ready "$tmp/$name.log" "${port[$name]}" && continue 2
    sleep 0.1
  done
  echo "rls_ab: $name did not become ready:" >&2
  tail -n 5 "$tmp/$name.log" >&2
  exit 1
done
# line RESULT ROUND SERVER TICKS_BEFORE TICKS_AFTER DENIED: a run's line from its driver's JSON
# RESULT; DENIED names the field of the requests not admitted (over_limit, non_2xx).
line() {
  python3 -c 'import json, sys
r = json.loads(sys.argv[1])
cpu = (int(sys.argv[5]) - int(sys.argv[4])) / int(sys.argv[7]) * 1e6 / max(r["requests"], 1)
print(sys.argv[2], sys.argv[3], round(r["rps"]), r["p99_us"], f"{cpu:.1f}",
      r["requests"] - r[sys.argv[6]])' "$@" "$hz"
}
# run_http ROUND SERVER: one wrk run, a line.
run_http() {
  local before after result prefixed="$tmp/log-r$1"
  [ -f "$prefixed" ] || sed "s/^/r$1./" "$log" >"$prefixed"
  before=$(ticks "${pid[$2]}")
  result=$(wrk -t2 -c64 -d"${seconds}s" --latency -s bench/wrk/check.lua \
    "http://127.0.0.1:${port[$2]}" -- "$prefixed" | tail -1)
  after=$(ticks "${pid[$2]}")
  line "$result" "$1" "$2" "$before" "$after" non_2xx
}
# run ROUND SERVER [VALUE]: one rls_load run, a line.
run() {
  [[ "$2" == *-http ]] && { run_http "$1" "$2"; return; }
  local source="--log $log" keys="--key remote_address" result before after
  [ -n "${3:-}" ] && source="--value $3"
  [[ "$2" == *-four ]] && keys="--key per_second --key per_minute --key per_hour --key per_day"
  before=$(ticks "${pid[$2]}")
  # shellcheck disable=SC2086
  result=$("$build/bench/rls_load" --target "127.0.0.1:${grpc[$2]}" --domain ab $keys \
    $source --prefix "r$1." --concurrency 64 --seconds "$seconds")
  after=$(ticks "${pid[$2]}")
  line "$result" "$1" "$2" "$before" "$after" over_limit
}
for round in $(seq "$rounds"); do
  for mix in $mixes; do
    value=""
    [ "$mix" = one ] && value="10.99.0.$round"
    if [ $((round % 2)) = 1 ]; then
      run "$round" "old-$mix" "$value"
      run "$round" "new-$mix" "$value"
    else
      run "$round" "new-$mix" "$value"
      run "$round" "old-$mix" "$value"
    fi
  done
done | tee "$tmp/runs.txt"
# The median over rounds of new/old in the same round: requests/s, p99, server CPU per request.
python3 - "$tmp/runs.txt" "$mixes" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    rnd, server, rps, p99, cpu, _ = line.split()
    runs[(rnd, server)] = (float(rps), float(p99), float(cpu))
for mix in sys.argv[2].split():
    rounds = sorted({r for r, s in runs if s == f"new-{mix}"})
    ratios = [[runs[(r, f"new-{mix}")][i] / runs[(r, f"old-{mix}")][i] for r in rounds]
              for i in range(3)]
    print(f"{mix}: new/old median requests/s {statistics.median(ratios[0]):.2f}, "
          f"p99 {statistics.median(ratios[1]):.2f}, CPU/request {statistics.median(ratios[2]):.2f} "
          f"({len(rounds)} rounds)")
PY
