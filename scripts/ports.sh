#!/usr/bin/env bash
# Source this file, then:
#   free_port   # prints a loopback port no server listens on, below the kernel's ephemeral range
#   start_on_free_port START READY [TAKEN]   # a server on a free port, ready only once it is ours
#
# The port is picked at random in 10000-32767. The kernel gives client sockets (and bind to port
# 0) their local ports from its ephemeral range (32768 and up), so a port taken there can be
# handed to another process's connection before our server binds it; below that range only
# another server picking the same port can take it. A server started on the port can still find
# it taken: check that whoever answers there is the process started (start_on_free_port does).
free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$((10000 + RANDOM % 22768))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "free_port: no free loopback port found in 10000-32767" >&2
  return 1
}

# Starts a server on a free port and waits until it is ready and ours. `START PORT` starts it in
# the background and sets STARTED_PID; `READY PORT PID` succeeds once the server on PORT is that
# process and ready (polled for 10 s while it runs). If it is not, it is stopped and another port
# tried: always without TAKEN, else only while `TAKEN PORT` says it exited because another server
# had taken the port. Sets STARTED_PORT; fails (status 1) after 20 ports or a failure TAKEN
# does not explain, leaving the messages to the caller.
start_on_free_port() {
  local start="$1" ready="$2" taken="${3:-}" port
  for _ in $(seq 1 20); do
    port=$(free_port) || return 1
    "$start" "$port"
    for _ in $(seq 1 100); do
      if "$ready" "$port" "$STARTED_PID"; then
        STARTED_PORT=$port
        return 0
      fi
      kill -0 "$STARTED_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill "$STARTED_PID" 2>/dev/null || true
    wait "$STARTED_PID" 2>/dev/null || true
    if [[ -n "$taken" ]] && ! "$taken" "$port"; then return 1; fi
  done
  return 1
}
