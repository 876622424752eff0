#!/usr/bin/env bash
# Installs the Debian packages hourglass needs to build, test and run (as root, or with sudo);
# prometheus for promtool, which checks the shipped alerting rules; chromium, which loads the
# operator's page in its tests.
# `install-deps.sh bench` adds what the benchmarks need (gnuplot, the Python limits peer);
# `install-deps.sh fuzz` adds clang and libFuzzer.
# Does nothing when all of them are installed already.
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  memcached libmemcached-dev redis-server libhiredis-dev liblmdb-dev
  libssl-dev libfmt-dev libhowardhinnant-date-dev tzdata libcli11-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost1.81-dev prometheus-cpp-dev libspdlog-dev
  libnghttp2-dev libgoogle-perftools-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  nginx-light curl python3 python3-flask python3-requests python3-yaml python3-jsonschema
  faketime ninja-build ccache mold prometheus chromium init-system-helpers
)
if [[ "${1:-}" == "bench" ]]; then
  packages+=(gnuplot-nox python3-limits python3-pymemcache python3-redis wrk lmdb-utils nodejs
            netcat-openbsd)
fi
if [[ "${1:-}" == "fuzz" ]]; then
  packages+=(clang libclang-rt-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
