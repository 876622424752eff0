#!/usr/bin/env bash
# The test suite again, built with clang, AddressSanitizer and UndefinedBehaviorSanitizer into
# ./build-asan (scripts/build-sanitizers.sh: the fuzz targets come with it): any finding (a use
# after free, a signed overflow, a leak) fails the test that hit it. CI runs it after
# scripts/test.sh. The installed-package test is left out: it builds a program without the
# sanitizers against these instrumented libraries, and so are the tests that take every
# descriptor of the process (`OutOfDescriptors`): UndefinedBehaviorSanitizer opens a pipe to
# check each new dynamic type and, finding none, reports a false "invalid vptr". Those run in the
# plain suite, and so do the benchmarks' smoke runs that take minutes here: the accuracy run,
# alone and audited, and the micro-benchmarks (whose local ledger fill alone decides six million
# times), over the engine, stores and audit the unit suites already cover. The property tests'
# random traces run a quarter as long (HOURGLASS_TEST_TRACES=short, tests/support/trace_length.h):
# here they look for memory errors; the plain suite proves exactness on whole traces.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-sanitizers.sh
cd build-asan
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export HOURGLASS_TEST_TRACES=short
ctest --output-on-failure -j"$(nproc)" --timeout 900 -E \
  '^installed_package_consumer$|OutOfDescriptors|^bench_(accuracy|audit_peers|micro)_smoke$'
