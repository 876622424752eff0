#!/usr/bin/env bash
# memcached's own bytes and items per feature after one day of traffic, hourglass next to Python
# `limits` 2.8 (fixed window, memcached), written to bench/results/memory.md:
#   bash bench/memory.sh          (after scripts/build.sh; bench/run.sh memory does both)
# Every run gets a fresh memcached on loopback. hourglass replays the whole day (`hourglass
# replay`, a manual clock; memcached's TTLs run on the real clock, so every item written stays
# alive while it is measured). The peer's windows run on the real clock, so it checks the same
# lines "now": its state per feature does not grow with traffic (at most two items per limit), and
# the synthetic traces give it their first 3,000 lines. Takes about 12 minutes on 2 cores (the
# 100 hits/s flood is 8.64 million hits per mode) per layout. HOURGLASS (default
# build/cli/hourglass) names another build to measure, MODES (default "admitted attempts
# recording") fewer modes, LAYOUTS (default "counters packed") fewer memcached layouts, OUT
# (default bench/results) where memory.md goes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/memcached.sh
out=${OUT:-bench/results}
hourglass=${HOURGLASS:-build/cli/hourglass}
log=../shared/data/apache_access_2015.log
tmp=$(mktemp -d)
trap 'stop_memcached; rm -rf "$tmp"' EXIT
bench/memory_traces.py "$tmp"
mkdir -p "$out"

# mode -> hourglass's policy arguments, and the peer's limits (plain recording has no limits; the
# peer, which cannot record without them, keeps the admitted mode's four).
declare -A policy=([admitted]="--limit 2/s --limit 5/m --limit 10/h --limit 100/d"
  [attempts]="--limit 3/h --limit 10/d --mode attempts" [recording]="")
declare -A peer_policy=([admitted]="2/second;5/minute;10/hour;100/day"
  [attempts]="3/hour;10/day" [recording]="2/second;5/minute;10/hour;100/day")
declare -A target=([admitted]="<= 2x the peer" [attempts]="" [recording]="")
declare -A synthetic_target=([every30s]="<= 10 KiB" [every1s]="<= 256 KiB"
  [flood]="<= today's (8.5 MiB)")
declare -A describe=([reallog]="the real log (1,753 client IPs, 10,000 hits)"
  [every30s]="a client every 30 s (2,880 hits)" [every1s]="a client every second (86,400 hits)"
  [flood]="a 100 hits/s flood (8,640,000 hits)")
real_features=$(awk '{ print $1 }' "$log" | sort -u | wc -l)

field() { sed -E "s/.*\"$2\": ?([0-9.]+).*/\1/" <<<"$1"; }
# "bytes items evictions sent" of the fresh server after the command "$@" (sent: the bytes the
# server wrote to its clients, its `bytes_written`: what the reads cost on the wire).
measured() {
  start_memcached 1024
  "$@" "$MEMCACHED_ADDRESS" >"$tmp/answer"
  echo "$(memcached_stat bytes) $(memcached_stat curr_items) $(memcached_stat evictions)" \
    "$(memcached_stat bytes_written)"
  stop_memcached
}
hourglass_run() {  # scenario mode layout address
  local input=("$tmp/$1.tsv") args
  [[ $1 == reallog ]] && input=("$log" --format apache)
  read -ra args <<<"${policy[$2]}"
  "$hourglass" --servers "$4" --layout "$3" --json replay "${input[@]}" "${args[@]}"
}
peer_run() {  # scenario mode address
  if [[ $1 == reallog ]]; then
    bench/peer_limits.py --servers "$3" --policy "${peer_policy[$2]}" --replay "$log"
  else
    bench/peer_limits.py --servers "$3" --policy "${peer_policy[$2]}" --trace "$tmp/$1.tsv" \
      --max-checks 3000
  fi
}
per() { awk -v a="$1" -v n="$2" 'BEGIN { v = a / n; printf(v < 10 ? "%.1f" : "%.0f", v) }'; }
human() {
  awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%.2f MiB", b / 1048576;
    else if (b >= 1024) printf "%.1f KiB", b / 1024; else printf "%.0f B", b }'
}

rows=()
for scenario in reallog every30s every1s flood; do
  features=1
  [[ $scenario == reallog ]] && features=$real_features
  for mode in ${MODES:-admitted attempts recording}; do
    echo "== $scenario, $mode, the peer" >&2
    read -r peer_bytes peer_items _ < <(measured peer_run "$scenario" "$mode")
    pb=$(per "$peer_bytes" "$features")
    goal=${target[$mode]}
    [[ -z $goal && $scenario != reallog ]] && goal=${synthetic_target[$scenario]}
    for layout in ${LAYOUTS:-counters packed}; do
      echo "== $scenario, $mode, $layout" >&2
      read -r bytes items evictions sent < <(measured hourglass_run "$scenario" "$mode" "$layout")
      answer=$(cat "$tmp/answer")
      checks=$(field "$answer" lines)
      hb=$(per "$bytes" "$features")
      rows+=("| ${describe[$scenario]} | $mode | $layout | $(human "$hb") |\
 $(per "$items" "$features") | $(human "$pb") | $(per "$peer_items" "$features") |\
 $(awk -v a="$hb" -v b="$pb" 'BEGIN { printf "%.1fx", a / b }') |\
 $(per "$(field "$answer" keys_read)" "$checks") | $(human "$(per "$sent" "$checks")") |\
 $(per "$(field "$answer" round_trips)" "$checks") | $evictions | ${goal:--} |")
    done
  done
done

{
  echo "# memcached memory per feature after one day of traffic"
  echo
  echo "\`bash bench/memory.sh\` ($hourglass at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown),"
  echo "$(date -u +%Y-%m-%d)). memcached's own \`stats\` (\`bytes\`, \`curr_items\`) of a fresh"
  echo "server after one day replayed by \`hourglass replay\`, divided by the features the traffic"
  echo "had; the peer is Python \`limits\` 2.8 fixed window on the same memcached with the same"
  echo "limits. Modes: admitted \`2/s, 5/m, 10/h, 100/d\`; attempts \`3/h, 10/d\`; recording: every"
  echo "hit recorded, no limits (the peer keeps the four admitted limits). Keys read and round trips"
  echo "are hourglass's per check (per hit when recording), from the replay's summary; a round trip"
  echo "is one wait for memcached (the replay batches a second's hits: as if each went alone)."
  echo "Bytes read per check: memcached's \`bytes_written\` (all it sent, protocol included) / checks."
  echo "Layouts (\`--layout\`): counters, an item per bucket; packed, an hour of a feature's"
  echo "buckets in one item of 2-byte records (docs/design.md)."
  echo
  echo "| traffic of one day | mode | layout | hourglass bytes / feature | items / feature | peer bytes / feature | peer items | ratio | keys read / check | bytes read / check | round trips / check | evictions | target |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} | tee "$out/memory.md"
