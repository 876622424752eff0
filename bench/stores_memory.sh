#!/usr/bin/env bash
# Memory per feature after one day of traffic on each store, the packed layout everywhere:
# memcached (its `stats` bytes), Redis (MEMORY USAGE of every key, summed) and LMDB (the pages of
# its two tables, `mdb_stat`), side by side with Python `limits` 2.8 fixed
# window on memcached and on Redis with the same limits. Written to bench/results/stores_memory.md:
#   bash bench/stores_memory.sh          (after scripts/build.sh)
# The scenarios and modes of bench/memory.sh (the real log, a client every 30 s, every second, a
# 100 hits/s flood; admitted `2/s, 5/m, 10/h, 100/d`, attempts `3/h, 10/d`, plain recording), each
# replayed by `hourglass replay` into a fresh server or directory. HOURGLASS (default
# build/cli/hourglass) names another build, MODES and SCENARIOS fewer runs, STORES fewer stores
# (default "memcached redis lmdb"), OUT (default bench/results) where the table goes. About 40
# minutes on 2 cores, the floods most of it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/memcached.sh
out=${OUT:-bench/results}
hourglass=${HOURGLASS:-build/cli/hourglass}
log=../shared/data/apache_access_2015.log
tmp=$(mktemp -d)
redis_pid=""
stop_redis() {
  if [[ -n "$redis_pid" ]]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
  fi
}
trap 'stop_memcached; stop_redis; rm -rf "$tmp"' EXIT
bench/memory_traces.py "$tmp"
mkdir -p "$out"

declare -A policy=([admitted]="--limit 2/s --limit 5/m --limit 10/h --limit 100/d"
  [attempts]="--limit 3/h --limit 10/d --mode attempts" [recording]="")
declare -A peer_policy=([admitted]="2/second;5/minute;10/hour;100/day"
  [attempts]="3/hour;10/day" [recording]="2/second;5/minute;10/hour;100/day")
declare -A describe=([reallog]="the real log (1,753 client IPs, 10,000 hits)"
  [every30s]="a client every 30 s (2,880 hits)" [every1s]="a client every second (86,400 hits)"
  [flood]="a 100 hits/s flood (8,640,000 hits)")
real_features=$(awk '{ print $1 }' "$log" | sort -u | wc -l)

per() { awk -v a="$1" -v n="$2" 'BEGIN { v = a / n; printf(v < 10 ? "%.1f" : "%.0f", v) }'; }
human() {
  awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%.2f MiB", b / 1048576;
    else if (b >= 1024) printf "%.1f KiB", b / 1024; else printf "%.0f B", b }'
}
start_redis() {
  local port
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --dir "$tmp" >/dev/null &
  redis_pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  REDIS_ADDRESS="127.0.0.1:$port"
}

# "bytes keys" a store holds after the command "$@" (given the store's --store arguments).
measured() {
  local store=$1 bytes keys base
  shift
  case $store in
    memcached)
      start_memcached 1024
      "$@" --store memcached --servers "$MEMCACHED_ADDRESS" >"$tmp/answer"
      echo "$(memcached_stat bytes) $(memcached_stat curr_items)"
      stop_memcached ;;
    redis)
      start_redis
      "$@" --store redis --servers "$REDIS_ADDRESS" >"$tmp/answer"
      bytes=$(redis-cli -p "${REDIS_ADDRESS##*:}" eval "local s = 0
        for _, k in ipairs(redis.call('KEYS', '*')) do s = s + redis.call('MEMORY', 'USAGE', k) end
        return s" 0)
      keys=$(redis-cli -p "${REDIS_ADDRESS##*:}" dbsize)
      echo "$bytes $keys"
      stop_redis ;;
    lmdb)
      rm -rf "$tmp/lmdb"
      "$@" --store "lmdb://$tmp/lmdb" >"$tmp/answer"
      local pages=0 table
      for table in values expiries; do
        pages=$((pages + $(mdb_stat -s "$table" "$tmp/lmdb" |
          awk -F': ' '/Branch pages|Leaf pages|Overflow pages/ { n += $2 } END { print n }')))
      done
      keys=$(mdb_stat -s values "$tmp/lmdb" | awk -F': ' '/Entries/ { print $2 }')
      echo "$((pages * 4096)) $keys" ;;
  esac
}
hourglass_run() {  # scenario mode then the store's arguments
  local input=("$tmp/$1.tsv") args
  [[ $1 == reallog ]] && input=("$log" --format apache)
  read -ra args <<<"${policy[$2]}"
  shift 2
  "$hourglass" "$@" --json replay "${input[@]}" "${args[@]}"
}
peer_run() {  # scenario mode then --store KIND --servers ADDRESS
  local scenario=$1 mode=$2 kind=$4 servers=$6
  if [[ $scenario == reallog ]]; then
    /usr/bin/python3 bench/peer_limits.py --store "$kind" --servers "$servers" \
      --policy "${peer_policy[$mode]}" --replay "$log"
  else
    /usr/bin/python3 bench/peer_limits.py --store "$kind" --servers "$servers" \
      --policy "${peer_policy[$mode]}" --trace "$tmp/$scenario.tsv" --max-checks 3000
  fi
}

rows=()
for scenario in ${SCENARIOS:-reallog every30s every1s flood}; do
  features=1
  [[ $scenario == reallog ]] && features=$real_features
  for mode in ${MODES:-admitted attempts recording}; do
    for store in ${STORES:-memcached redis lmdb}; do
      echo "== $scenario, $mode, $store" >&2
      read -r bytes keys < <(measured "$store" hourglass_run "$scenario" "$mode")
      peer="-"
      if [[ $store != lmdb ]]; then
        read -r peer_bytes _ < <(measured "$store" peer_run "$scenario" "$mode")
        peer=$(human "$(per "$peer_bytes" "$features")")
      fi
      rows+=("| ${describe[$scenario]} | $mode | $store | $(human "$(per "$bytes" "$features")") |\
 $(per "$keys" "$features") | $peer |")
    done
  done
done

{
  echo "# Memory per feature on each store after one day of traffic"
  echo
  echo "\`bash bench/stores_memory.sh\` ($hourglass at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown),"
  echo "$(date -u +%Y-%m-%d)). One day replayed by \`hourglass replay\` into a fresh store, the packed"
  echo "layout on each, divided by the features the traffic had: memcached's \`stats\` bytes; Redis's"
  echo "\`MEMORY USAGE\` of every key, summed; LMDB's pages of its two tables (\`mdb_stat\`: whole 4 KiB"
  echo "pages, B+tree pages half full or more). Keys: memcached's items, Redis's DBSIZE, LMDB's"
  echo "entries. The peer is Python \`limits\` 2.8 fixed window on the same server (the first 3,000"
  echo "hits of the synthetic traces, checked now). Modes as in bench/results/memory.md."
  echo
  echo "| traffic of one day | mode | store | hourglass bytes / feature | keys / feature | peer bytes / feature |"
  echo "| --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} | tee "$out/stores_memory.md"
