#!/usr/bin/env bash
# The shipped monitoring (packaging/monitoring/): the alerting rules pass `promtool check rules`
# and their unit tests (`promtool test rules`: each alert fires on its series, quiet on healthy
# ones); the Grafana dashboard is JSON whose every query is valid PromQL; and every hourglass
# metric either names is one the service defines (docs/reference.md lists them all).
#   monitoring_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
dir="$src/packaging/monitoring"
command -v promtool >/dev/null || {
  echo "promtool is missing: apt-get install prometheus (scripts/install-deps.sh)" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
promtool check rules "$dir/hourglass-alerts.yml"
(cd "$dir" && promtool test rules hourglass-alerts_test.yml)
# Each dashboard query as a recording rule: promtool parses it as Prometheus would.
python3 - "$dir/hourglass-dashboard.json" "$work/dashboard-rules.yml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
assert exprs, "the dashboard has no queries"
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace('"$instance"', '".*"')
        out.write(f"      - record: dashboard_query_{i}\n        expr: {json.dumps(e)}\n")
PY
promtool check rules "$work/dashboard-rules.yml" >/dev/null
missing=()
for metric in $(cat "$dir"/hourglass-alerts.yml "$dir"/hourglass-dashboard.json |
  grep -oE 'hourglass_[a-z_]+' | sed -E 's/_(bucket|count|sum)$//' | sort -u); do
  grep -qF "\`$metric\`" "$src/docs/reference.md" || missing+=("$metric")
done
if ((${#missing[@]} > 0)); then
  echo "the monitoring names metrics the service does not define: ${missing[*]}" >&2
  exit 1
fi
echo "monitoring: rules checked and unit-tested, dashboard queries parse, every metric exists"
