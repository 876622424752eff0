#!/usr/bin/env bash
# Regenerates every benchmark table and picture under bench/results/ from scratch:
#   bash bench/run.sh
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

echo "== keys read per query (build/bench/keys_report)"
build/bench/keys_report 1 >"$out/keys_report.md"
cat "$out/keys_report.md"

echo "== accuracy (build/bench/accuracy)"
build/bench/accuracy --out "$out" --apache "$log" --start-memcached
gnuplot -e "dir='$out'" bench/plots/errors.gp
gnuplot -e "dir='$out'" bench/plots/boundary.gp

echo "== micro-benchmarks (build/bench/micro)"
build/bench/micro --benchmark_min_time=0.5 | tee "$out/micro.txt"

echo "== load (build/bench/load)"
{
  echo "Command: \`build/bench/load --threads 2 --features 10000 --seconds $seconds --peer bench/peer_limits.py --scaling\`"
  echo
  build/bench/load --threads 2 --features 10000 --seconds "$seconds" --peer bench/peer_limits.py --scaling
  echo
  echo "The same without denials (limits never reached: no take-backs), isolating the engine's own cost:"
  echo "\`build/bench/load --threads 2 --features 10000 --seconds $seconds --policy \"1000000/s, 1000000/m, 1000000/h, 1000000/d\"\`"
  echo
  build/bench/load --threads 2 --features 10000 --seconds "$seconds" \
    --policy "1000000/s, 1000000/m, 1000000/h, 1000000/d"
} | tee "$out/load.md"
echo "results in $out/"
