#!/usr/bin/env bash
# Helpers to run a throw-away `hourglass serve` on a free loopback port. Source this file, then:
#   start_serve LOG HOURGLASS [OPTIONS...] serve [SERVE_OPTIONS...]
#       # runs the command with `--listen 127.0.0.1:PORT` added, its stderr appended to LOG; once
#       # ready, sets SERVE_PID and SERVE_PORT
#   serve_ready LOG PORT [FROM]   # whether the service logging to LOG (from byte FROM on, 0 by
#                                 # default) listens on 127.0.0.1:PORT and answers /readyz there
#   free_port                  # a free loopback port for another server (from scripts/ports.sh)
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# A service logs its `listening on` line once it holds its port, before it answers anything: so
# another server on that port, which would answer /readyz too, is not taken for it.
serve_ready() {
  tail -c +$((${3:-0} + 1)) "$1" 2>/dev/null | grep -q "listening on 127.0.0.1:$2 " &&
    curl -fs "http://127.0.0.1:$2/readyz" >/dev/null
}

# Ready once serve_ready says so of what it logged (not what LOG held before it started). Had
# another server taken the port between free_port and our bind, ours exits saying so, and another
# port is tried. Any other exit, or no answer within 10 s, is an error (exit 1, the log's last
# lines on stderr).
start_serve() {
  local log="$1" command=("${@:2}") from=0
  # Called by start_on_free_port within this function: they see its locals.
  _serve_start() {
    from=$(stat -c %s "$log" 2>/dev/null || echo 0)
    "${command[@]}" --listen "127.0.0.1:$1" 2>>"$log" &
    STARTED_PID=$!
  }
  _serve_ours() { serve_ready "$log" "$1" "$from"; }
  _serve_taken() {
    tail -c +$((from + 1)) "$log" | grep -q "cannot listen on 127.0.0.1:$1: Address already in use"
  }
  if ! start_on_free_port _serve_start _serve_ours _serve_taken; then
    echo "start_serve: hourglass serve did not become ready:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
  SERVE_PID=$STARTED_PID
  SERVE_PORT=$STARTED_PORT
}
