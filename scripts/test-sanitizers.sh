#!/usr/bin/env bash
# The test suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer into
# ./build-asan: any finding (a use after free, a signed overflow, a leak) fails the test that
# hit it. CI runs it after scripts/test.sh. The installed-package test is left out: it builds
# a program without the sanitizers against these instrumented libraries, and so are the tests
# that take every descriptor of the process (`OutOfDescriptors`): UndefinedBehaviorSanitizer
# opens a pipe to check each new dynamic type and, finding none, reports a false "invalid vptr".
# Those run in the plain suite, and so does the accuracy benchmark's smoke run (two minutes
# under the sanitizers, over the engine and stores the unit suites already cover).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOURGLASS_WERROR=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build build-asan -j"$(nproc)"
cd build-asan
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --output-on-failure -j"$(nproc)" --timeout 900 -E '^installed_package_consumer$|OutOfDescriptors|^bench_accuracy_smoke$'
