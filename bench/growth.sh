#!/usr/bin/env bash
# Cost as limits grow: one check's latency, keys and bytes read, the store's CPU and memory per
# feature, for limits from 100/d to 1,000,000/d and 10,000/h to 1,000,000/h, each feature holding
# half its limit; hourglass on memcached (with and without its hot path) and on Redis, beside
# Python limits' moving window on the same Redis (build/bench/growth, bench/growth_limits.py).
# Writes bench/results/growth.md and growth.png.
#   bash bench/growth.sh   (CHECKS=20000 and SECONDS_PER_RUN=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
out=bench/results/growth.md
checks="${CHECKS:-20000}"
seconds="${SECONDS_PER_RUN:-3}"
command="$build/bench/growth --checks $checks --seconds $seconds --peer '/usr/bin/python3 bench/growth_limits.py' --dat bench/results/growth.dat"
{
  echo "# Cost per check as limits grow"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD), $(nproc) cores; \`$command\`"
  echo "(\`bash bench/growth.sh\`). Each feature holds half its limit, its hits spread over the"
  echo "window at one call per second at most, as traffic at that rate leaves them; the checks"
  echo "then go to the features in turn, one thread, at the real time, none denied. Bytes sent,"
  echo "CPU and memory are the store's own figures (memcached \`stats\`, Redis \`INFO\`)."
  echo
  eval "$command"
} >"$out.new"
mv "$out.new" "$out"
gnuplot -e "dir='bench/results'" bench/plots/growth.gp
echo "wrote $out and bench/results/growth.png"
