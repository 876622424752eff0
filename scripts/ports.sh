#!/usr/bin/env bash
# Source this file, then:
#   free_port   # prints a loopback port no server listens on, below the kernel's ephemeral range
#
# The port is picked at random in 10000-32767. The kernel gives client sockets (and bind to port
# 0) their local ports from its ephemeral range (32768 and up), so a port taken there can be
# handed to another process's connection before our server binds it; below that range only
# another server picking the same port can take it. A server started on the port can still find
# it taken: check that whoever answers there is the process started (start_memcached does).
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
