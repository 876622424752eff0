#!/usr/bin/env bash
# Helpers to run a throw-away memcached on a free loopback port. Source this file, then:
#   start_memcached [MB]   # sets MEMCACHED_PID and MEMCACHED_ADDRESS; MB of memory (default 256)
#   memcached_stat NAME    # the value of NAME in the server's `stats` (bytes, curr_items, ...)
#   memcached_stat_on PORT NAME   # the same of the memcached on 127.0.0.1:PORT
#   stop_memcached
#   free_port              # a free loopback port for another server (from scripts/ports.sh)
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# The value of NAME in the `stats` of the memcached listening on 127.0.0.1:PORT; nothing if none
# answers there.
memcached_stat_on() {
  ( (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'stats\r\nquit\r\n' >&3 && timeout 5 cat <&3) ||
    true) 2>/dev/null |
    awk -v name="$2" '$1 == "STAT" && $2 == name { sub(/\r$/, "", $3); print $3 }'
}

# Ready once the server on the port reports our PID: had another server taken the port between
# free_port and our bind, ours exits, and the one answering is not ours.
start_memcached() {
  local megabytes="${1:-256}" user_flag=()
  if [[ $(id -u) -eq 0 ]]; then user_flag=(-u root); fi
  # Called by start_on_free_port within this function: they see its locals.
  _memcached_start() {
    memcached "${user_flag[@]}" -l 127.0.0.1 -p "$1" -U 0 -t 2 -m "$megabytes" &
    STARTED_PID=$!
  }
  _memcached_ours() { [[ "$(memcached_stat_on "$1" pid)" == "$2" ]]; }
  if ! start_on_free_port _memcached_start _memcached_ours; then
    echo "could not start memcached on a free loopback port" >&2
    return 1
  fi
  MEMCACHED_PID=$STARTED_PID
  MEMCACHED_ADDRESS="127.0.0.1:$STARTED_PORT"
}

memcached_stat() { memcached_stat_on "${MEMCACHED_ADDRESS##*:}" "$1"; }

stop_memcached() {
  if [[ -n "${MEMCACHED_PID:-}" ]]; then
    kill "$MEMCACHED_PID" 2>/dev/null || true
    wait "$MEMCACHED_PID" 2>/dev/null || true
    MEMCACHED_PID=""
  fi
}
