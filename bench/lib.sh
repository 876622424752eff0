#!/usr/bin/env bash
# Helpers of the benchmark scripts that start servers of their own. Source this file from the
# repository's root (it sources scripts/memcached.sh too), then:
#   bench_scratch NAME         # $tmp, a scratch folder, and pids=(): on exit, every PID in pids is
#                              # killed and the folder removed
#   free_port                  # prints a free loopback port
#   bench_memcached [MB]       # a memcached on a free port ($mc), killed on exit
#   ticks PID                  # the process's user + system time so far, in clock ticks ($hz/s)
#   envoy_limit KEY UNIT N     # one descriptor of Envoy's (the reference's) YAML: N per UNIT
#   envoy_rate_limits KEY      # one descriptor with hourglass's rate_limits: 2/s, 5/m, 10/h, 100/d
#   envoy_four_descriptors     # the same as Envoy writes it: a descriptor per limit (per_second,
#                              # per_minute, per_hour, per_day)
#   bench_serve NAME ARGS...   # `hourglass serve` in namespace NAME on $mc with ARGS, $threads
#                              # threads: HTTP on ${port[NAME]}, gRPC on ${grpc[NAME]}, PID
#                              # ${pid[NAME]}, log $tmp/NAME.log (needs `declare -A port grpc pid`
#                              # and $build; $hourglass, if set, is the binary instead of
#                              # $build/cli/hourglass)
source scripts/memcached.sh

bench_scratch() {
  tmp="$(mktemp -d "/tmp/hourglass-$1-XXXXXX")"
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
}


bench_memcached() {
  start_memcached "${1:-1024}"
  pids+=("$MEMCACHED_PID")
  mc=${MEMCACHED_ADDRESS##*:}
}

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

envoy_limit() {
  printf '  - key: %s\n    rate_limit:\n      unit: %s\n      requests_per_unit: %s\n' "$@"
}

envoy_rate_limits() {
  printf '  - key: %s\n    rate_limits:\n' "$1"
  local spec
  for spec in "second 2" "minute 5" "hour 10" "day 100"; do
    # shellcheck disable=SC2086
    set -- $spec
    printf '      - {unit: %s, requests_per_unit: %s}\n' "$1" "$2"
  done
}

envoy_four_descriptors() {
  envoy_limit per_second second 2
  envoy_limit per_minute minute 5
  envoy_limit per_hour hour 10
  envoy_limit per_day day 100
}

bench_serve() {
  local name=$1
  shift
  port[$name]=$(free_port)
  grpc[$name]=$(free_port)
  "${hourglass:-$build/cli/hourglass}" serve "$@" --servers "127.0.0.1:$mc" --namespace "$name" \
    --listen "127.0.0.1:${port[$name]}" --grpc-listen "127.0.0.1:${grpc[$name]}" \
    --threads "$threads" 2>"$tmp/$name.log" &
  pid[$name]=$!
  pids+=("${pid[$name]}")
}
