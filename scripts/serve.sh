#!/usr/bin/env bash
# Helpers to run a throw-away `hourglass serve` on a free loopback port. Source this file, then:
#   start_serve LOG HOURGLASS [OPTIONS...] serve [SERVE_OPTIONS...]
#       # runs the command with `--listen 127.0.0.1:PORT` added, its stderr appended to LOG; once
#       # ready, sets SERVE_PID and SERVE_PORT
#   serve_listening LOG PORT   # whether LOG says a service listens on 127.0.0.1:PORT
#   free_port                  # a free loopback port for another server (from scripts/ports.sh)
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# A service logs this line once it holds its port, before it answers anything.
serve_listening() { grep -q "listening on 127.0.0.1:$2 " "$1" 2>/dev/null; }

# Ready once its own log says it listens on the port and /readyz answers there. Had another
# server taken the port between free_port and our bind, ours exits saying so, and another port is
# tried: whoever else answers /readyz there is not ours. Any other exit is an error (exit 1, the
# log's last lines on stderr); so is no answer within 10 s.
start_serve() {
  local log="$1" port pid
  shift
  for _ in $(seq 1 20); do
    port=$(free_port) || return 1
    "$@" --listen "127.0.0.1:$port" 2>>"$log" &
    pid=$!
    for _ in $(seq 1 100); do
      if serve_listening "$log" "$port" && curl -fs "http://127.0.0.1:$port/readyz" >/dev/null; then
        SERVE_PID=$pid
        SERVE_PORT=$port
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      echo "start_serve: hourglass serve did not become ready on 127.0.0.1:$port in 10 s:" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    wait "$pid" 2>/dev/null || true
    grep -q "cannot listen on 127.0.0.1:$port: Address already in use" "$log" && continue
    echo "start_serve: hourglass serve exited:" >&2
    tail -n 20 "$log" >&2
    return 1
  done
  echo "start_serve: no free loopback port for hourglass serve" >&2
  return 1
}
