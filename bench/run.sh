#!/usr/bin/env bash
# Regenerates every benchmark table and picture under bench/results/ from scratch:
#   bash bench/run.sh   (or one step: keys, accuracy, micro, load, replay, serve, rls, http_peers, growth)
# Installs what is missing (Debian packages), builds, and runs: keys per query, the accuracy
# replay (with plots), the micro-benchmarks, and the load driver against a memcached it starts on
# loopback (raw baseline, the Python limits peer, scaling). Takes about 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench
scripts/build.sh
out=bench/results
mkdir -p "$out"
log="../shared/data/apache_access_2015.log"
seconds="${HOURGLASS_BENCH_SECONDS:-10}"
step="${1:-all}"  # all, or one of: keys accuracy micro load replay memory serve rls http_peers growth stores
want() { [[ "$step" == all || "$step" == "$1" ]]; }

{
  echo "# Machine"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "- memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "- kernel: $(uname -r)"
  echo "- memcached: $(memcached -V), libmemcached $(pkg-config --modversion libmemcached)"
  echo "- compiler: $(c++ --version | head -1), build type RelWithDebInfo (-O2)"
  echo "- client, server and load share the cores (loopback)"
} >"$out/machine.md"

if want keys; then
echo "== keys read per query (build/bench/keys_report)"
build/bench/keys_report 1 >"$out/keys_report.md"
cat "$out/keys_report.md"
fi

if want accuracy; then
echo "== accuracy (build/bench/accuracy)"
build/bench/accuracy --out "$out" --apache "$log" --start-memcached --start-redis --lmdb
gnuplot -e "dir='$out'" bench/plots/errors.gp
gnuplot -e "dir='$out'" bench/plots/boundary.gp
python3 bench/audit_peers.py --out "$out/accuracy_audited.md"  # the same, judged by `hourglass audit`
fi

if want micro; then
echo "== micro-benchmarks (build/bench/micro)"
build/bench/micro --benchmark_min_time=0.5 | tee "$out/micro.txt"
fi

if want load; then
echo "== load (build/bench/load)"
nodenials="1000000/s, 1000000/m, 1000000/h, 1000000/d"
run_load() {
  echo "\`build/bench/load $*\`"
  echo
  build/bench/load "$@"
  echo
}
{
  echo "# Load against memcached on loopback"
  echo
  echo "Every run interleaves engine and raw slices (see bench/README.md). Commands as given."
  echo
  echo "## Mixed traffic, policy 2/s, 5/m, 10/h, 100/d: hot path, the Python peer, scaling"
  echo
  run_load --threads 2 --features 10000 --seconds "$seconds" --peer bench/peer_limits.py --scaling
  echo "## The same with the exact cover (no hot path)"
  echo
  run_load --threads 2 --features 10000 --seconds "$seconds" --exact-cover
  echo "## Without denials (limits never reached), exact cover: the engine's own cost over the same keys"
  echo
  run_load --threads 2 --features 10000 --seconds "$seconds" --exact-cover --policy "$nodenials"
  echo "## Hot features only, never denied: hot path against one raw round trip carrying the same increments"
  echo
  run_load --threads 2 --hot-share 1.0 --seconds "$seconds" --minimal-raw --policy "$nodenials"
  echo "## Hot features only, policy 2/s, 5/m, 10/h, 100/d (mostly denied: the blocked-client cache)"
  echo
  run_load --threads 2 --hot-share 1.0 --seconds "$seconds" --minimal-raw
} | tee "$out/load.md"
fi

if want replay; then
echo "== replay of the real log against memcached: hourglass and Python limits, same checks"
source scripts/memcached.sh
start_memcached
trap stop_memcached EXIT
limits=(--limit 2/s --limit 5/m --limit 10/h --limit 100/d)
hot=$(build/cli/hourglass --servers "$MEMCACHED_ADDRESS" --namespace hot --json replay "$log" \
  --format apache "${limits[@]}")
alone=$(build/cli/hourglass --servers "$MEMCACHED_ADDRESS" --namespace alone --json replay "$log" \
  --format apache "${limits[@]}" --batch 1)
exact=$(build/cli/hourglass --servers "$MEMCACHED_ADDRESS" --namespace exact --exact-cover --json \
  replay "$log" --format apache "${limits[@]}")
peer=$(bench/peer_limits.py --servers "$MEMCACHED_ADDRESS" --replay "$log")
stop_memcached
trap - EXIT
field() { sed -E "s/.*\"$2\": ?([0-9.]+).*/\1/" <<<"$1"; }
rate() { awk -v n="$(field "$1" lines)" -v s="$(field "$1" seconds)" 'BEGIN { printf "%.0f", n / s }'; }
hot_rate=$(rate "$hot")
alone_rate=$(rate "$alone")
exact_rate=$(rate "$exact")
peer_rate=$(field "$peer" checks_per_second | awk '{ printf "%.0f", $1 }')
{
  echo "# Replay of the real log against memcached"
  echo
  echo "\`hourglass replay ../shared/data/apache_access_2015.log --format apache --limit 2/s --limit 5/m --limit 10/h --limit 100/d\`"
  echo "against a memcached on loopback, one thread; the peer does the same 10,000 checks with"
  echo "\`bench/peer_limits.py --replay\` (Python limits, fixed windows, the same four limits)."
  echo "The hits of one second are checked as one batch (\`--batch\`, default 256: one write and one"
  echo "read per step for the whole batch); \`--batch 1\` checks one at a time. Round trips: per check,"
  echo "as if each went alone; batches: the engine's batch checks (one per second of the log)."
  echo
  echo "| limiter | checks/s | keys read / check (median, p99) | round trips | batches | ratio to Python limits |"
  echo "| --- | --- | --- | --- | --- | --- |"
  echo "| hourglass, hot path | $hot_rate | $(field "$hot" keys_read_p50), $(field "$hot" keys_read_p99) | $(field "$hot" round_trips) | $(field "$hot" batches) | $(awk -v a="$hot_rate" -v b="$peer_rate" 'BEGIN { printf "%.1fx", a / b }') |"
  echo "| hourglass, hot path, \`--batch 1\` | $alone_rate | $(field "$alone" keys_read_p50), $(field "$alone" keys_read_p99) | $(field "$alone" round_trips) | $(field "$alone" batches) | $(awk -v a="$alone_rate" -v b="$peer_rate" 'BEGIN { printf "%.1fx", a / b }') |"
  echo "| hourglass, exact cover | $exact_rate | $(field "$exact" keys_read_p50), $(field "$exact" keys_read_p99) | $(field "$exact" round_trips) | $(field "$exact" batches) | $(awk -v a="$exact_rate" -v b="$peer_rate" 'BEGIN { printf "%.1fx", a / b }') |"
  echo "| Python limits 2.8 fixed window | $peer_rate | 4 incr per check | 40000 | - | 1.0x |"
} | tee "$out/replay.md"
fi
if want memory; then
  echo "== memcached memory per feature after a day (bench/memory.sh)"
  bash bench/memory.sh
fi
if want serve; then
  bash bench/serve.sh
fi
if want rls; then
  bash bench/rls.sh
fi
if want http_peers; then
  bash bench/http_peers.sh
fi
if want growth; then
  echo "== cost per check as limits grow (bench/growth.sh)"
  bash bench/growth.sh
fi
if want stores; then
  echo "== each store, the Redis peers (bench/stores.sh), memory on each (bench/stores_memory.sh)"
  bash bench/stores.sh
  bash bench/stores_memory.sh
fi
echo "results in $out/"
