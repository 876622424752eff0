#!/usr/bin/env bash
# examples/llm_tokens: the gateway's demonstration against a real `hourglass serve` and memcached
# on free ports. Each request is checked with an estimate and settled with the tokens it used:
# the tenant is refused once the minute's budget is spent, and hourglass counts exactly the
# tokens used (the script exits 1 otherwise). Again with a tenant's own plan, which binds sooner.
set -euo pipefail
build="$(cd "$1" && pwd)"
source_dir="$(cd "$2" && pwd)"
source "$source_dir/tests/support/example_services.sh"
start_services "$build" "$source_dir/examples/llm_tokens/policy.yaml"
gateway="$source_dir/examples/llm_tokens/gateway.py"
python3 "$gateway" --hourglass "http://127.0.0.1:$hg" >"$log.default" ||
  { echo "default plan: $(cat "$log.default") $(cat "$log")"; exit 1; }
grep -q "refused: estimate" "$log.default" || { echo "never refused: $(cat "$log.default")"; exit 1; }
python3 "$gateway" --hourglass "http://127.0.0.1:$hg" --tenant small --plan 5000/m \
  --plan 50000/d >"$log.plan" || { echo "own plan: $(cat "$log.plan")"; exit 1; }
default_requests=$(grep -c "^request" "$log.default")
plan_requests=$(grep -c "^request" "$log.plan")
[[ "$plan_requests" -lt "$default_requests" ]] ||
  { echo "a 5000/m plan took $plan_requests requests, the default $default_requests"; exit 1; }
echo "llm_tokens example: $(tail -1 "$log.default"); with a 5000/m plan: $(tail -1 "$log.plan")"
