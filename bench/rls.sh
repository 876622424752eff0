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
# First, against the reference (envoyproxy/ratelimit, ../shared/peers/envoy-ratelimit, memcache
# backend, its cache of keys over the limit on, 64 idle connections) on the same memcached with
# the same driver, 64 in flight: one descriptor remote_address 5/minute with the log's
# addresses; one of 1000000/second (every request admitted); 2/s, 5/m, 10/h, 100/d as the
# reference writes it (four descriptors) against hourglass's rate_limits (one descriptor) and
# hourglass with the same four; and one client 64 in flight for 3 s under 5/minute, admitted.
# Writes bench/results/rls.md.
#   bash bench/rls.sh   (HOURGLASS_BENCH_SECONDS=10 by default; ROUNDS=2; THREADS=nproc;
#   REFERENCE=0 leaves the reference out). Each round asks for clients of its own (values
#   prefixed r<round>.), so that no round starts from the counts of the one before.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-10}"
rounds="${ROUNDS:-2}"
threads="${THREADS:-$(nproc)}"
out=bench/results/rls.md
source bench/lib.sh
bench_scratch rls-bench
bench_memcached 1024
declare -A port grpc pid
# serve NAME LIMITS ENVOY_DESCRIPTORS: one `hourglass serve` in its own namespace.
serve() {
  printf 'events:\n  url_shorten:\n    limits: [%s]\n' "$2" >"$tmp/$1.yaml"
  printf 'domain: bench\ndescriptors:\n%s' "$3" >"$tmp/$1-envoy.yaml"
  bench_serve "$1" --policy "$tmp/$1.yaml" --envoy-config "$tmp/$1-envoy.yaml"
}
# 2/s, 5/m, 10/h, 100/d as the reference writes it: a descriptor per limit.
four="$(envoy_four_descriptors)"
serve policy "2/s, 5/m, 10/h, 100/d" "$four"
serve policy-one "2/s, 5/m, 10/h, 100/d" "$(envoy_rate_limits client)"
serve admit-all "1000000/s, 100000000/d" "$(envoy_limit client second 1000000)"
port[floor]=$(free_port)
"$build/bench/serve_floor" --listen-port "${port[floor]}" --servers "127.0.0.1:$mc" \
  --threads "$threads" 2>"$tmp/floor.log" &
pid[floor]=$!
pids+=(${pid[floor]})
sleep 1

# The reference and hourglass side by side, each with its own Envoy configuration per mix:
# domains mix, admit, four, one (the reference: one service; hourglass: one per domain).
reference="$(cd .. && pwd)/shared/peers/envoy-ratelimit"
if [ "${REFERENCE:-1}" = 1 ]; then
  mkdir -p "$tmp/ref/config/rl"
  printf 'domain: mix\ndescriptors:\n%s\n' "$(envoy_limit remote_address minute 5)" >"$tmp/ref/config/rl/mix.yaml"
  printf 'domain: admit\ndescriptors:\n%s\n' "$(envoy_limit remote_address second 1000000)" >"$tmp/ref/config/rl/admit.yaml"
  printf 'domain: four\ndescriptors:\n%s\n' "$four" >"$tmp/ref/config/rl/four.yaml"
  printf 'domain: one\ndescriptors:\n%s\n' "$(envoy_limit remote_address minute 5)" >"$tmp/ref/config/rl/one.yaml"
  ref_port=$(free_port)
  pid[reference]=$(MEMCACHE_MAX_IDLE_CONNS=64 LOCAL_CACHE_SIZE_IN_BYTES=1048576 HTTP_PORT=$(free_port) \
    DEBUG_PORT=$(free_port) LOG_FILE="$tmp/reference.log" \
    "$reference/start.sh" "127.0.0.1:$mc" "$tmp/ref/config/rl" "$ref_port")
  pids+=(${pid[reference]})
  grpc[reference]=$ref_port
  # hourglass: one service per domain, as the reference's files say (rate_limits for "four").
  hg_envoy() {  # NAME DOMAIN DESCRIPTORS
    printf 'domain: %s\ndescriptors:\n%s\n' "$2" "$3" >"$tmp/$1-envoy.yaml"
    bench_serve "$1" --envoy-config "$tmp/$1-envoy.yaml"
  }
  hg_envoy hg-mix mix "$(envoy_limit remote_address minute 5)"
  hg_envoy hg-admit admit "$(envoy_limit remote_address second 1000000)"
  hg_envoy hg-four four "$four"
  hg_envoy hg-rate-limits four "$(envoy_rate_limits remote_address)"
  hg_envoy hg-one one "$(envoy_limit remote_address minute 5)"
fi

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
# versus ROUND SERVER DOMAIN KEYS SECONDS [VALUE]: one rls_load run; a JSON line with the
# server's CPU.
versus() {
  local round=$1 server=$2 domain=$3 keys=$4 secs=$5 value=${6:-} before after result source
  if [ -n "$value" ]; then source="--value $value"; else source="--log $log"; fi
  before=$(ticks "${pid[$server]}")
  # shellcheck disable=SC2086
  result=$("$build/bench/rls_load" --target "127.0.0.1:${grpc[$server]}" --domain "$domain" $keys \
    $source --prefix "r$round." --concurrency 64 --seconds "$secs")
  after=$(ticks "${pid[$server]}")
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["server"]=sys.argv[2]; r["mix"]=sys.argv[3]
r["round"]=int(sys.argv[7]); r["cpu_us"]=(int(sys.argv[5])-int(sys.argv[4]))/int(sys.argv[6])*1e6/max(r["requests"],1)
print(json.dumps(r))' "$result" "$server" "$domain" "$before" "$after" "$hz" "$round"
}
# both ROUND DOMAIN HG_SERVER REFERENCE_KEYS HG_KEYS SECONDS [VALUE]: the reference and hourglass,
# the reference first in odd rounds.
both() {
  local round=$1 domain=$2 hg=$3 ref_keys=$4 hg_keys=$5 secs=$6 value=${7:-}
  if [ $((round % 2)) = 1 ]; then versus "$round" reference "$domain" "$ref_keys" "$secs" "$value"; fi
  versus "$round" "$hg" "$domain" "$hg_keys" "$secs" "$value"
  if [ $((round % 2)) = 0 ]; then versus "$round" reference "$domain" "$ref_keys" "$secs" "$value"; fi
}
if [ "${REFERENCE:-1}" = 1 ]; then
  sleep 1
  ra="--key remote_address"
  four_keys="--key per_second --key per_minute --key per_hour --key per_day"
  for round in $(seq "$rounds"); do
    both "$round" mix hg-mix "$ra" "$ra" "$seconds"
    both "$round" admit hg-admit "$ra" "$ra" "$seconds"
    both "$round" four hg-rate-limits "$four_keys" "$ra" "$seconds"
    versus "$round" hg-four four "$four_keys" "$seconds"
    both "$round" one hg-one "$ra" "$ra" 3 "10.99.0.1"
  done >"$tmp/versus.jsonl"
  python3 - "$tmp/versus.jsonl" <<'PY' >"$tmp/versus.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = {"mix": "one descriptor remote_address 5/minute, the log's addresses",
         "admit": "every request admitted (1000000/second)",
         "four": "2/s, 5/m, 10/h, 100/d (the reference: four descriptors)",
         "one": "one client, 64 in flight, 3 s, 5/minute"}
print("| round | mix | server | requests/s | p50 µs | p99 µs | CPU µs/request | driver CPU µs/request | over limit | admitted | errors |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['round']} | {r['mix']} | {r['server']} | {r['rps']:,.0f} | {r['p50_us']} | "
          f"{r['p99_us']} | {r['cpu_us']:.1f} | {r['driver_cpu_us']:.1f} | {r['over_limit']} | "
          f"{r['requests'] - r['over_limit']} | {r['errors']} |")
print()
print("hourglass against the reference in the same round (requests/s ratio; p99 hourglass/reference):")
for n in sorted({r["round"] for r in rows}):
    rs = [r for r in rows if r["round"] == n]
    ref = {r["mix"]: r for r in rs if r["server"] == "reference"}
    for r in rs:
        if r["server"] == "reference" or r["mix"] == "one":
            continue
        b = ref[r["mix"]]
        print(f"- round {n}, {names[r['mix']]}, {r['server']}: **{r['rps'] / b['rps']:.2f}x**, "
              f"p99 {r['p99_us'] / max(b['p99_us'], 1):.2f}")
    print(f"- round {n}, {names['one']}: admitted " + ", ".join(
        f"{r['server']} {r['requests'] - r['over_limit']}" for r in rs if r["mix"] == "one"))
PY
fi
{
  if [ "${REFERENCE:-1}" = 1 ]; then
    echo "# ShouldRateLimit against the reference (envoyproxy/ratelimit)"
    echo
    echo "\`bash bench/rls.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
    echo "the reference (../shared/peers/envoy-ratelimit: memcache backend, MEMCACHE_MAX_IDLE_CONNS=64,"
    echo "LOCAL_CACHE_SIZE_IN_BYTES=1048576) and \`hourglass serve\` (${threads} threads, one service per"
    echo "Envoy configuration) on one memcached; bench/rls_load drives each in turn (gRPC on nghttp2,"
    echo "one connection, 64 in flight), ${seconds} s per run (3 s for one client), ${rounds} rounds, the"
    echo "order swapped each round. CPU: the server process's user + system time per request; driver"
    echo "CPU: rls_load's own, the same work for both servers."
    echo
    cat "$tmp/versus.md"
    echo
  fi
  echo "# ShouldRateLimit next to /v1/check and the floor"
  echo
  echo "\`bash bench/rls.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "the drivers (wrk for HTTP, bench/rls_load for gRPC: one connection, N requests in flight),"
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
