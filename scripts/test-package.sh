#!/usr/bin/env bash
# The Debian package, installed for real (as root; CI runs it on its fresh machine): builds it,
# installs it with dpkg -i, runs the installed binary, checks the unit with systemd-analyze, then
# starts the unit's own ExecStart line, as the unit's user with the unit's environment file,
# against a real memcached on a free loopback port: traffic until a client is limited,
# `hourglass top` finds it, ExecReload reloads, SIGTERM stops with 0. The same command line then
# runs on a real Redis and on an LMDB file in the unit's state directory. Then purges the package.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
  echo "test-package: run as root (it installs and removes the package)" >&2
  exit 2
fi
deb=$(bash scripts/package.sh | tail -1)
unit=/lib/systemd/system/hourglass.service
work=$(mktemp -d /tmp/hourglass-package-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  dpkg -P hourglass >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "test-package: $*" >&2
  [[ -f "$work/serve.log" ]] && sed 's/^/  serve: /' "$work/serve.log" >&2
  exit 1
}
source scripts/memcached.sh
source scripts/serve.sh

dpkg -i "$deb" >/dev/null
[[ "$(/usr/bin/hourglass --version)" == "hourglass $(awk -F'[ )]' '/^project\(hourglass VERSION/ {print $3}' CMakeLists.txt)" ]] ||
  fail "installed --version: $(/usr/bin/hourglass --version)"
getent passwd hourglass >/dev/null || fail "no system user hourglass"
[[ "$(stat -c %U /var/lib/hourglass)" == hourglass ]] || fail "no state directory of its own"
man=$(zcat /usr/share/man/man1/hourglass.1.gz)
for section in '^.SS hourglass serve' '^.SH POLICY FILE' '^.B HOURGLASS_POLICY' '^.B block_for'; do
  grep -q "$section" <<<"$man" || fail "man page lacks $section"
done
for f in README.md CHANGELOG.md docs/reference.md docs/openapi.yaml docs/operations.md \
  examples/example.yaml \
  examples/monitoring/hourglass-alerts.yml examples/monitoring/hourglass-dashboard.json; do
  [[ -f /usr/share/doc/hourglass/$f ]] || fail "no /usr/share/doc/hourglass/$f"
done
wants=/etc/systemd/system/multi-user.target.wants/hourglass.service
[[ -L "$wants" ]] || fail "the unit is not enabled on installation"
for f in /etc/default/hourglass /etc/hourglass/policy.yaml; do
  dpkg-query -W -f='${Conffiles}\n' hourglass | grep -q " $f " || fail "$f is not a conffile"
done
if command -v systemd-analyze >/dev/null; then  # a setting systemd would ignore is a failure too
  verified=$(systemd-analyze verify "$unit" 2>&1) && [[ -z "$verified" ]] ||
    fail "systemd-analyze verify $unit: $verified"
fi
echo "test-package: installed $(basename "$deb"): $(/usr/bin/hourglass --version), man page, user, unit"

# The unit's own command line, environment file and user; only the servers and port are ours.
start_memcached 64 >/dev/null || fail "cannot start memcached"
pids+=("$MEMCACHED_PID")
memcached_port="${MEMCACHED_ADDRESS##*:}"
port=$(free_port)
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
exec_reload=$(sed -n 's/^ExecReload=//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
env_file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
# Whether the service started last is ready on our port (serve_ready), within 10 s.
await_ready() {
  for _ in $(seq 100); do
    serve_ready "$work/serve.log" "$port" && return 0
    sleep 0.1
  done
  return 1
}
# Starts the unit's command line as its user with its environment file, the store given by the
# environment assignments given ("NAME=VALUE ..."); waits until it is ready and sets main_pid and MAINPID.
start_unit() {
  : >"$work/serve.log"
  runuser -u "$user" -- bash -c "set -a; source '$env_file'; set +a
    export $*
    HOURGLASS_SERVE_ARGS=\"\${HOURGLASS_SERVE_ARGS/127.0.0.1:8080/127.0.0.1:$port}\"
    exec $exec_start" 2>"$work/serve.log" &
  main_pid=$!
  pids+=("$main_pid")
  await_ready || fail "the unit's command line did not become ready ($*)"
  # runuser waits for its child: the service is the process named hourglass of the unit's user.
  MAINPID=$(pgrep -u "$user" -x hourglass) || fail "no hourglass process of user $user"
}
# The default policy: signup allows 3 an hour per address.
limit_a_client() {
  local codes=""
  for _ in 1 2 3 4 5; do
    codes+=$(curl -s -o /dev/null -w '%{http_code} ' "$url/v1/check" \
      -d '{"event":"signup","feature":"ann@example.com"}')
  done
  [[ "$codes" == "200 200 200 429 429 " ]] || fail "checks answered $codes ($*)"
}
stop_unit() {
  kill -TERM "$MAINPID"
  wait "$main_pid" || fail "SIGTERM: exit $?"
  grep -q " info stopped" "$work/serve.log" || fail "no stop line"
}
url="http://127.0.0.1:$port"
start_unit HOURGLASS_SERVERS=127.0.0.1:$memcached_port

limit_a_client memcached
grep -q "is hourglass's example policy" "$work/serve.log" || fail "the example policy is not told"
top=$(/usr/bin/hourglass --servers "127.0.0.1:$memcached_port" top --service "$url" \
  --event signup --once)
echo "$top" | grep -Eq '^ann@example\.com +2 +0 +denied' || fail "hourglass top: $top"
echo "test-package: the unit's command served; hourglass top found the limited client"

eval "${exec_reload//\$MAINPID/$MAINPID}"
for _ in $(seq 50); do grep -q "reloaded /etc/hourglass/policy.yaml" "$work/serve.log" && break; sleep 0.1; done
grep -q "reloaded /etc/hourglass/policy.yaml: no event changed" "$work/serve.log" ||
  fail "ExecReload did not reload"
stop_unit
echo "test-package: ExecReload reloaded, SIGTERM stopped with 0"

# The other stores, through the environment file's variables as an operator sets them.
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$work" >/dev/null &
redis_pid=$!
pids+=("$redis_pid")
redis_owner() { redis-cli -p "$redis_port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p'; }
for _ in $(seq 50); do [[ "$(redis_owner)" == "$redis_pid" ]] && break; sleep 0.1; done
[[ "$(redis_owner)" == "$redis_pid" ]] || fail "our redis-server does not answer on $redis_port"
start_unit HOURGLASS_STORE=redis HOURGLASS_SERVERS=127.0.0.1:$redis_port
limit_a_client redis
grep -q "store redis 127.0.0.1:$redis_port" "$work/serve.log" || fail "not on Redis"
stop_unit
start_unit HOURGLASS_STORE=lmdb:///var/lib/hourglass/counts
limit_a_client lmdb
stop_unit
[[ "$(stat -c %U /var/lib/hourglass/counts/data.mdb)" == hourglass ]] ||
  fail "the LMDB file is not the service user's"
start_unit HOURGLASS_STORE=lmdb:///var/lib/hourglass/counts  # a restart keeps the counts
[[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/check" \
  -d '{"event":"signup","feature":"ann@example.com"}')" == 429 ]] || fail "LMDB lost its counts"
stop_unit
echo "test-package: the unit's command served on Redis and on LMDB (counts kept across a restart)"

# Without systemd (a container): the README's foreground command, nothing between it and the
# signals (setpriv execs): the environment file given to serve, SIGHUP to its own pid reloads,
# SIGTERM stops it with 0; the CLI on the host reads the same file and needs no flags.
env_copy=$(mktemp /tmp/hourglass-env-XXXXXX)
sed "s/127.0.0.1:11211/127.0.0.1:$memcached_port/; s/127.0.0.1:8080/127.0.0.1:$port/" \
  /etc/default/hourglass >"$env_copy"
chmod 644 "$env_copy"
: >"$work/serve.log"
setpriv --reuid=hourglass --regid=hourglass --init-groups /usr/bin/hourglass serve \
  --env-file "$env_copy" --policy /etc/hourglass/policy.yaml 2>"$work/serve.log" &
main_pid=$!
pids+=("$main_pid")
await_ready || fail "the foreground command did not become ready"
[[ "$(ps -o comm= -p "$main_pid")" == hourglass ]] || fail "the foreground command is not hourglass"
[[ "$(ps -o user= -p "$main_pid")" == hourglass ]] || fail "the foreground command's user"
HOURGLASS_ENV_FILE="$env_copy" /usr/bin/hourglass reset signup ann@example.com >/dev/null ||
  fail "reset through the environment file"
limit_a_client foreground
counted=$(HOURGLASS_ENV_FILE="$env_copy" /usr/bin/hourglass count signup ann@example.com --window 1h)
echo "$counted" | grep -Eq '^  1h +5$' || fail "count through the environment file: $counted"
# Who is blocked, by which limit and until when: the CLI with no flags, the log, the metrics.
inspected=$(HOURGLASS_ENV_FILE="$env_copy" /usr/bin/hourglass inspect signup ann@example.com)
grep -Eq '^a hit now: denied until .* 3/h binds$' <<<"$inspected" ||
  fail "inspect does not say until when: $inspected"
top=$(HOURGLASS_ENV_FILE="$env_copy" /usr/bin/hourglass top --service "$url" --once)
grep -Eq '^ann@example\.com .* 3/h +free at ' <<<"$top" || fail "top without --event: $top"
for _ in $(seq 30); do grep -q "info denied: signup" "$work/serve.log" && break; sleep 0.1; done
grep -q "info denied: signup \"ann@example.com\"" "$work/serve.log" || fail "no denial logged"
metrics=$(curl -s "$url/metrics")
grep -q '^hourglass_build_info{version="' <<<"$metrics" || fail "no hourglass_build_info"
grep -q '^hourglass_config_last_reload_successful 1' <<<"$metrics" || fail "no reload gauge"
kill -HUP "$main_pid"
for _ in $(seq 50); do grep -q "reloaded /etc/hourglass/policy.yaml" "$work/serve.log" && break; sleep 0.1; done
grep -q "reloaded /etc/hourglass/policy.yaml" "$work/serve.log" || fail "SIGHUP did not reload"
kill -TERM "$main_pid"
wait "$main_pid" || fail "SIGTERM: exit $?"
rm -f "$env_copy"
echo "test-package: the foreground command served, reloaded on SIGHUP, stopped on SIGTERM; the CLI read its file"

# An operator's disable (what `systemctl disable` does to the unit's link) survives an upgrade
# (deb-systemd-helper, as dh_installsystemd).
rm -f "$wants"
dpkg -i "$deb" >/dev/null
[[ ! -e "$wants" ]] || fail "an upgrade enabled the unit the operator disabled"
echo "test-package: an upgrade kept the operator's disable"

dpkg -P hourglass >/dev/null
[[ ! -e "$wants" ]] || fail "purge left the unit enabled"
[[ ! -e /usr/bin/hourglass && ! -e "$unit" && ! -e /etc/hourglass/policy.yaml &&
  ! -e /var/lib/hourglass ]] ||
  fail "purge left files"
echo "test-package: purged"
