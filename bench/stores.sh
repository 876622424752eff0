#!/usr/bin/env bash
# hourglass on each store, and against the Redis peers, written to bench/results/stores.md:
#   bash bench/stores.sh          (after scripts/build.sh and scripts/install-deps.sh bench)
# 1. The load driver on memcached, Redis and LMDB (same traffic: 10,000 features, half of the
#    checks on 10 hot ones, `2/s, 5/m, 10/h, 100/d`), each against its own raw baseline in the
#    same run (memcached: one store batch; Redis: INCRBY and MGET pipelined; LMDB: one write
#    transaction), then on Redis the increment-first path beside the atomic one, and the peers on
#    the same Redis: Python `limits` 2.8 fixed and moving window, rate-limiter-flexible.
# 2. A boundary attack in real time on one Redis (bench/boundary_attack.py): what each limiter
#    admits in a sliding minute.
# HOURGLASS_BENCH_SECONDS (default 10) per kind of run. About 6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results}
seconds="${HOURGLASS_BENCH_SECONDS:-10}"
mkdir -p "$out"
peers=(--peer "/usr/bin/python3 bench/peer_limits.py --store redis --strategy fixed"
  --peer "/usr/bin/python3 bench/peer_limits.py --store redis --strategy moving")
node_note=""
if command -v npm >/dev/null && (cd bench/peers && npm install --no-audit --no-fund >/dev/null 2>&1); then
  peers+=(--peer "node bench/peers/rlf.js")
else
  node_note="(rate-limiter-flexible skipped: no npm, or its registry unreachable)"
fi
redis_pid=""
tmp=$(mktemp -d)
trap '[[ -n "$redis_pid" ]] && kill "$redis_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$tmp" >/dev/null &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done

run_load() {
  echo "\`build/bench/load $*\`"
  echo
  build/bench/load "$@"
  echo
}
{
  echo "# hourglass on each store, and against the Redis peers"
  echo
  echo "\`bash bench/stores.sh\` (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown),"
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) shared cores, $(redis-server --version | cut -d' ' -f1-3),"
  echo "$(memcached -V), LMDB $(pkg-config --modversion lmdb)). Every run interleaves engine and raw"
  echo "slices (bench/README.md); numbers vary by 15-30% between runs on this shared machine, so"
  echo "compare within a table. $node_note"
  echo
  echo "## memcached"
  echo
  run_load --store memcached --threads 2 --features 10000 --seconds "$seconds"
  echo "## LMDB (one file, no server)"
  echo
  run_load --store lmdb --threads 2 --features 10000 --seconds "$seconds"
  echo "## Redis: checks decided on the store (atomic), and the peers on the same Redis"
  echo
  run_load --store redis --servers "127.0.0.1:$port" --threads 2 --features 10000 \
    --seconds "$seconds" "${peers[@]}"
  echo "## Redis: the increment-first path (write, read, take back when denied)"
  echo
  run_load --store redis --servers "127.0.0.1:$port" --threads 2 --features 10000 \
    --seconds "$seconds" --increment-first
  echo "## A boundary attack in real time on Redis"
  echo
  echo "\`/usr/bin/python3 bench/boundary_attack.py\`: one client, a hit at t=0, four just before"
  echo "t=60, five just after, never more than two in a second; every limiter \`2/s, 5/m, 10/h,"
  echo "100/d\` on the same Redis, at the same instants."
  echo
  no_node=()
  [[ -n "$node_note" ]] && no_node=(--no-node)
  /usr/bin/python3 bench/boundary_attack.py --servers "127.0.0.1:$port" "${no_node[@]}"
} | tee "$out/stores.md"
