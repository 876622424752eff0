#!/usr/bin/env bash
# Helpers to run a throw-away memcached on a free loopback port. Source this file, then:
#   start_memcached        # sets MEMCACHED_PID and MEMCACHED_ADDRESS
#   stop_memcached
start_memcached() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      local user_flag=()
      if [[ $(id -u) -eq 0 ]]; then user_flag=(-u root); fi
      memcached "${user_flag[@]}" -l 127.0.0.1 -p "$port" -U 0 -t 2 -m 256 &
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

stop_memcached() {
  if [[ -n "${MEMCACHED_PID:-}" ]]; then
    kill "$MEMCACHED_PID" 2>/dev/null || true
    wait "$MEMCACHED_PID" 2>/dev/null || true
    MEMCACHED_PID=""
  fi
}
