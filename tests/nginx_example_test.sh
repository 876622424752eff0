#!/usr/bin/env bash
# examples/nginx: a real nginx, `hourglass serve` and memcached on free ports; real HTTP requests
# through nginx. Three requests a minute per client pass; the fourth is 429 with the service's
# Retry-After; the service counted exactly the three. Then the service is killed, and requests
# go through (the example fails open when the service itself is down).
set -euo pipefail
build="$1"
source_dir="$2"
check() {
  local url="$NGINX_URL/shorten"
  for i in 1 2 3; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url")
    [[ "$code" == 200 ]] || { echo "request $i: expected 200, got $code"; exit 1; }
  done
  headers=$(curl -s -D - -o /dev/null "$url")
  echo "$headers" | head -1 | grep -q " 429" || { echo "4th request not 429: $headers"; exit 1; }
  retry=$(echo "$headers" | tr -d '\r' | awk -F': ' 'tolower($1)=="retry-after" {print $2}')
  [[ "$retry" =~ ^[0-9]+$ && "$retry" -ge 59 && "$retry" -le 60 ]] ||
    { echo "Retry-After '$retry' not in 59..60: $headers"; exit 1; }
  echo "$headers" | grep -qi '^ratelimit: "3/m";r=0' || { echo "no RateLimit: $headers"; exit 1; }
  echo "nginx example: 3 allowed, then 429 with Retry-After $retry"
  kill -KILL "$HOURGLASS_PID"
  while kill -0 "$HOURGLASS_PID" 2>/dev/null; do sleep 0.05; done
  for i in 1 2 3 4 5; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url")
    [[ "$code" == 200 ]] || { echo "service down, request $i: expected 200 (fail open), got $code"; exit 1; }
  done
  echo "nginx example: with the service killed, 5 of 5 requests went through"
}
export -f check
bash "$source_dir/examples/nginx/run.sh" "$build" -- bash -c check
