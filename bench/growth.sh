#!/usr/bin/env bash
# Cost as limits grow: one check's latency, keys and bytes read, the store's CPU and memory per
# feature, for limits from 100/d to 1,000,000/d and 10,000/h to 1,000,000/h, each feature holding
# half its limit; hourglass on memcached (with and without its hot path) and on Redis, beside
# Python limits' moving window on the same Redis (build/bench/growth, bench/growth_limits.py).
# Then memcached holding 10,000 to 10,000,000 features: its bytes per feature, and the p99 of a
# check; then a month of a hit every second on two ladders, in memcached and in Redis. Writes
# bench/results/growth.md and growth.png (about 50 minutes, most of it filling 10,000,000
# features, each with its day ledger, and the two months; 3 GB of memcached).
#   bash bench/growth.sh   (CHECKS=20000, SECONDS_PER_RUN=3, FEATURE_COUNTS="10000 ... 10000000")
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
out=bench/results/growth.md
checks="${CHECKS:-20000}"
seconds="${SECONDS_PER_RUN:-3}"
counts="${FEATURE_COUNTS:-10000 100000 1000000 10000000}"
command="$build/bench/growth --checks $checks --seconds $seconds --peer '/usr/bin/python3 bench/growth_limits.py' --dat bench/results/growth.dat --feature-counts $counts --month-days 31 --month-stores memcached redis"
{
  cat <<EOF
# Cost per check as limits grow

$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD), $(nproc) cores: \`bash bench/growth.sh\`, which runs
\`$command\`.

Each feature holds half its limit, its hits spread over the window at one call per second at
most, as traffic at that rate leaves them; enough features that no check is denied. hourglass
checks them in turn at the last second of an hour by its clock, when the hour's pack (which every
check at now reads) holds the most; Python limits checks at the real time (its cost does not
depend on it). One thread. Bytes sent, CPU and memory are the store's own figures (memcached
\`stats\`, Redis \`INFO\`).

The second table: memcached holding more and more features, each hit once within an hour (its
pack and its day ledger's two counters), then features picked at random checked by \`2/s, 5/m,
10/h, 100/d\` at the hour's end, one thread. The engine's caches hold 100,000 features, so beyond
that most checks find nothing of their feature cached.

The third table: one feature hit every second for 31 days in memcached and in Redis with
\`--retention 31d\`, on the default ladder and on one with days, then the month so far, the last
31 days and the last day read by a fresh engine (a CLI call) and by one that read them before (a
service); the store's CPU per check is its own figure, as above.

EOF
  eval "$command"
} >"$out.new"
mv "$out.new" "$out"
gnuplot -e "dir='bench/results'" bench/plots/growth.gp
echo "wrote $out and bench/results/growth.png"
