#!/usr/bin/env bash
# hourglass serve's HTTP API against a Node service on rate-limiter-flexible (bench/peers/
# rlf_service.js: RateLimiterMemcache, a union of the same four limits, one worker per core), on
# one memcached, both driven by wrk with the same requests: POST /v1/check for event url_shorten,
# the client addresses of the real log at random, 64 connections. Policy 2/s, 5/m, 10/h, 100/d
# (the Node peer: each a fixed window from the key's first hit). Rounds alternate which goes
# first; each round asks for clients of its own (addresses prefixed r<round>.), so no round
# starts from the counts of the one before. A third server is nginx answering every request with a
# denied client's answer as hourglass gives it, limiting nothing: what HTTP alone costs, the most
# any limiter could answer over HTTP on this machine. A fourth is hourglass's own HTTP server
# answering the same bytes (bench/serve_floor.cc --answer-head/--answer-body): what its HTTP stack
# alone costs, beside nginx's. Each server runs at each thread (worker)
# count of THREADS, every round; the ratio compares each at its best count in the round: wrk
# shares the cores, and how many threads serve beside it changes how often each side waits.
# Writes bench/results/http_peers.md.
#   bash bench/http_peers.sh   (HOURGLASS_BENCH_SECONDS=8; ROUNDS=2; THREADS="nproc 2*nproc";
#   needs npm and node: `scripts/install-deps.sh bench`)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
log="$(cd .. && pwd)/shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-8}"
rounds="${ROUNDS:-2}"
counts="${THREADS:-$(nproc) $((2 * $(nproc)))}"
out=bench/results/http_peers.md
source bench/lib.sh
(cd bench/peers && npm install --no-audit --no-fund >/dev/null 2>&1) || {
  echo "http_peers.sh: npm install failed in bench/peers (no npm, or its registry unreachable)" >&2
  exit 2
}
bench_scratch http-peers
bench_memcached 1024
declare -A port grpc pid
printf 'events:\n  url_shorten:\n    limits: [2/s, 5/m, 10/h, 100/d]\n' >"$tmp/policy.yaml"
for threads in $counts; do
  bench_serve "hourglass-$threads" --policy "$tmp/policy.yaml"
  port[node-$threads]=$(free_port)
  node bench/peers/rlf_service.js --port "${port[node-$threads]}" --servers "127.0.0.1:$mc" \
    --policy 2/1,5/60,10/3600,100/86400 --workers "$threads" 2>"$tmp/node-$threads.log" &
  pid[node-$threads]=$!
  pids+=("${pid[node-$threads]}")
done
sleep 2
# nginx answering every request with the very bytes hourglass answers a denied client
# (status, RateLimit headers, body), limiting nothing and reading no store: what HTTP alone costs
# on this machine, so the ratios say how much of the gap is the limiter's own work.
# nginx_conf WORKERS
nginx_conf() {
  local feature='{"event":"url_shorten","feature":"nginx.probe"}' i first=${counts%% *}
  for i in 1 2 3 4 5 6 7; do
    curl -s -o "$tmp/nginx.body" -D "$tmp/nginx.head" -H 'Content-Type: application/json' \
      -d "$feature" "http://127.0.0.1:${port[hourglass-$first]}/v1/check"
  done
  grep -q '^HTTP/1.1 429' "$tmp/nginx.head" || { echo "http_peers.sh: no 429 to copy" >&2; exit 1; }
  printf 'worker_processes %s;\ndaemon off;\npid %s/nginx-%s.pid;\nevents { worker_connections 1024; }\n' \
    "$1" "$tmp" "$1"
  printf 'http {\n  access_log off;\n  keepalive_requests 100000000;\n  server_tokens off;\n'
  printf '  client_body_temp_path %s/nginx-body;\n' "$tmp"
  printf '  server {\n    listen 127.0.0.1:%s;\n    location /v1/check {\n' "${port[nginx-$1]}"
  printf '      default_type application/json;\n'
  tr -d '\r' <"$tmp/nginx.head" | grep -iE '^(RateLimit-Policy|RateLimit|Retry-After):' |
    sed -E "s/^([^:]+): (.*)$/      add_header \1 '\2' always;/"
  printf "      return 429 '%s';\n    }\n  }\n}\n" "$(cat "$tmp/nginx.body")"
}
for threads in $counts; do
  port[nginx-$threads]=$(free_port)
  nginx_conf "$threads" >"$tmp/nginx-$threads.conf"
  nginx -p "$tmp" -c "$tmp/nginx-$threads.conf" -e "$tmp/nginx-$threads.err" &
  pid[nginx-$threads]=$!
  pids+=("${pid[nginx-$threads]}")
done
# hourglass's HTTP server (the service's I/O threads, no engine, no store) answering the same.
for threads in $counts; do
  port[stack-$threads]=$(free_port)
  "$build/bench/serve_floor" --listen-port "${port[stack-$threads]}" --threads "$threads" \
    --answer-head "$tmp/nginx.head" --answer-body "$tmp/nginx.body" 2>"$tmp/stack-$threads.log" &
  pid[stack-$threads]=$!
  pids+=("${pid[stack-$threads]}")
done
sleep 1
# The process's and its children's (Node's workers) CPU so far, in clock ticks.
tree_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do total=$((total + $(ticks "$p"))); done
  echo "$total"
}
# run ROUND SERVER THREADS: one wrk run; a JSON line with the server's and wrk's CPU per request
# (wrk's from the shell's `times`: its children's user and system time, before and after). Each
# run asks for clients of its own (the Node services share their keys in memcached).
run() {
  local before after result prefixed name="$2-$3"
  prefixed="$tmp/log-r$1-$3"
  [ -f "$prefixed" ] || sed "s/^/r$1t$3./" "$log" >"$prefixed"
  before=$(tree_ticks "${pid[$name]}")
  result=$( (wrk -t2 -c64 -d"${seconds}s" --latency -s bench/wrk/check.lua \
    "http://127.0.0.1:${port[$name]}" -- "$prefixed" | tail -1; times))
  after=$(tree_ticks "${pid[$name]}")
  python3 -c 'import json,re,sys; lines=sys.argv[1].splitlines(); r=json.loads(lines[0])
r["round"]=int(sys.argv[2]); r["server"]=sys.argv[3]; r["threads"]=int(sys.argv[7])
n=max(r["requests"],1); r["cpu_us"]=(int(sys.argv[5])-int(sys.argv[4]))/int(sys.argv[6])*1e6/n
spent=sum(int(m)*60+float(s) for m,s in re.findall(r"(\d+)m([\d.]+)s", lines[-1]))
r["driver_cpu_us"]=spent*1e6/n; print(json.dumps(r))' \
    "$result" "$1" "$2" "$before" "$after" "$hz" "$3"
}
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="node hourglass nginx stack"
  else order="stack nginx hourglass node"; fi
  for server in $order; do
    for threads in $counts; do run "$round" "$server" "$threads"; done
  done
done >"$tmp/runs.jsonl"
rlf_version=$(node -p "require('./bench/peers/node_modules/rate-limiter-flexible/package.json').version")
{
  echo "# hourglass serve's HTTP API against rate-limiter-flexible"
  echo
  echo "\`bash bench/http_peers.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD):"
  echo "\`hourglass serve\` and a Node service on rate-limiter-flexible ${rlf_version}"
  echo "(bench/peers/rlf_service.js: RateLimiterMemcache) on one memcached, each at ${counts// / and }"
  echo "threads (Node: worker processes); wrk (2 threads, 64 connections, ${seconds} s) posts /v1/check"
  echo "for the log's client addresses at random; policy 2/s, 5/m, 10/h, 100/d; ${rounds} rounds, the"
  echo "order swapped each round. CPU: the server's user + system time per request (Node: its"
  echo "workers' too); wrk's own CPU is the same work for both. Denied: the 429s. nginx (as many"
  echo "workers) answers every request with the bytes hourglass answers a denied client, limiting"
  echo "nothing: what HTTP alone costs here. stack: hourglass's own HTTP server answering the"
  echo "same bytes on its I/O threads (bench/serve_floor.cc, no engine, no store): what its HTTP"
  echo "stack alone costs."
  echo
  python3 - "$tmp/runs.jsonl" "$(nproc)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cores = int(sys.argv[2])
print("| round | server | threads | requests/s | p50 µs | p99 µs | CPU µs/request | wrk CPU µs/request | denied | socket errors |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['round']} | {r['server']} | {r['threads']} | {r['rps']:,.0f} | {r['p50_us']} | "
          f"{r['p99_us']} | {r['cpu_us']:.1f} | {r['driver_cpu_us']:.1f} | {r['non_2xx']} | "
          f"{r['socket_errors']} |")
print()
print("hourglass against rate-limiter-flexible in the same round, each at its best thread count")
print("in the round (requests/s; p99 hourglass/peer), then at each count alike. HTTP alone: nginx's")
print("best requests/s over the peer's best, the most a limiter answering over HTTP here could")
print("reach; stack: hourglass's HTTP server alone over the peer (hourglass at what share of it).")
print("Ceiling: the ratio a server costing no CPU at all would reach, wrk alone filling the")
print(f"{cores} cores at its CPU per request against hourglass at its best:")
for n in sorted({r["round"] for r in rows}):
    best = {}
    for r in rows:
        if r["round"] == n and (r["server"] not in best or r["rps"] > best[r["server"]]["rps"]):
            best[r["server"]] = r
    h, p, f, k = best["hourglass"], best["node"], best["nginx"], best["stack"]
    alike = {(r["server"], r["threads"]): r for r in rows if r["round"] == n}
    same = ", ".join(f"{t}: {alike[('hourglass', t)]['rps'] / alike[('node', t)]['rps']:.2f}x"
                     for t in sorted({t for _, t in alike}))
    ceiling = cores * 1e6 / h["driver_cpu_us"] / p["rps"]
    print(f"- round {n}: **{h['rps'] / p['rps']:.2f}x** (hourglass at {h['threads']} threads, Node at "
          f"{p['threads']} workers), p99 {h['p99_us'] / max(p['p99_us'], 1):.2f}; alike {same}; "
          f"HTTP alone {f['rps'] / p['rps']:.1f}x (hourglass at {h['rps'] / f['rps']:.0%} of it); "
          f"stack {k['rps'] / p['rps']:.1f}x ({h['rps'] / k['rps']:.0%}); "
          f"ceiling {ceiling:.1f}x")
PY
} | tee "$out"
