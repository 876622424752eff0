#!/usr/bin/env bash
# Helpers to run a throw-away memcached on a free loopback port. Source this file, then:
#   start_memcached [MB]   # sets MEMCACHED_PID and MEMCACHED_ADDRESS; MB of memory (default 256)
#   memcached_stat NAME    # the value of NAME in the server's `stats` (bytes, curr_items, ...)
#   stop_memcached
start_memcached() {
  local port megabytes="${1:-256}"
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      local user_flag=()
      if [[ $(id -u) -eq 0 ]]; then user_flag=(-u root); fi
      memcached "${user_flag[@]}" -l 127.0.0.1 -p "$port" -U 0 -t 2 -m "$megabytes" &
      MEMCACHED_PID=$!
      for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
          MEMCACHED_ADDRESS="127.0.0.1:$port"
          return 0
        fi
        kill -0 "$MEMCACHED_PID" 2>/dev/null || break
        sleep 0.05
      done
      kill "$MEMCACHED_PID" 2>/dev/null || true
    fi
  done
  echo "could not start memcached on a free loopback port" >&2
  return 1
}

memcached_stat() {
  local answer
  exec 4<>"/dev/tcp/${MEMCACHED_ADDRESS%:*}/${MEMCACHED_ADDRESS##*:}"
  printf 'stats\r\nquit\r\n' >&4
  answer=$(timeout 5 cat <&4)
  exec 4<&-
  awk -v name="$1" '$1 == "STAT" && $2 == name { sub(/\r$/, "", $3); print $3 }' <<<"$answer"
}

stop_memcached() {
  if [[ -n "${MEMCACHED_PID:-}" ]]; then
    kill "$MEMCACHED_PID" 2>/dev/null || true
    wait "$MEMCACHED_PID" 2>/dev/null || true
    MEMCACHED_PID=""
  fi
}
