#!/usr/bin/env bash
# examples/python: the Flask shorten-URL app against a real `hourglass serve` and memcached on
# free ports, driven over HTTP. Per account, two URLs a minute pass, the third is 429 with the
# service's Retry-After, and the address limit counted only the admitted two.
set -euo pipefail
build="$(cd "$1" && pwd)"
source_dir="$(cd "$2" && pwd)"
source "$source_dir/tests/support/example_services.sh"
start_services "$build" "$source_dir/examples/python/policy.yaml"
app="$(free_port)"
python3 "$source_dir/examples/python/shorten_app.py" --port "$app" \
  --hourglass "http://127.0.0.1:$hg" 2>>"$log" &
track_pid $!
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$app/" && break
  sleep 0.1
done
post() {
  curl -s -D "$log.h" -o "$log.b" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "{\"url\":\"https://example.com/$1\",\"email\":\"ann@example.com\"}" \
    "http://127.0.0.1:$app/shorten"
}
for i in 1 2; do
  code=$(post "$i")
  [[ "$code" == 201 ]] || { echo "request $i: expected 201, got $code: $(cat "$log.b") $(cat "$log")"; exit 1; }
done
code=$(post 3)
[[ "$code" == 429 ]] || { echo "request 3: expected 429, got $code: $(cat "$log.b")"; exit 1; }
retry=$(tr -d '\r' <"$log.h" | awk -F': ' 'tolower($1)=="retry-after" {print $2}')
[[ "$retry" =~ ^[0-9]+$ && "$retry" -ge 59 ]] || { echo "Retry-After '$retry'"; exit 1; }
count=$(curl -s "http://127.0.0.1:$hg/v1/count?event=url_shorten&feature=127.0.0.1&window=1m")
echo "$count" | grep -q '"count":2' || { echo "address count is not 2: $count"; exit 1; }
rm -f "$log.h" "$log.b"
echo "python example: 2 created, then 429 with Retry-After $retry; the address counted 2"
