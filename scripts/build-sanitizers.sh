#!/usr/bin/env bash
# Builds everything with clang, AddressSanitizer and UndefinedBehaviorSanitizer into ./build-asan:
# the libraries, the command, the tests and benchmarks, and the fuzz targets as libFuzzer
# binaries (the code is instrumented for libFuzzer's coverage too, -fsanitize=fuzzer-no-link), so
# that one build serves scripts/test-sanitizers.sh and scripts/fuzz.sh. Extra arguments are
# targets to build (all by default).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cmake.sh
scripts/install-deps.sh fuzz
sanitizers="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=clang CXX=clang++ hourglass_configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DHOURGLASS_WERROR=ON -DHOURGLASS_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $sanitizers" \
  -DCMAKE_EXE_LINKER_FLAGS="$sanitizers"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build-asan -j"$(nproc)" "${targets[@]}"
