#!/usr/bin/env bash
# The tests of code that threads share, built with ThreadSanitizer (clang) into ./build-tsan: the
# engine's concurrency and exactness under concurrent writers, the stores' pools and connections,
# the service's batcher, listeners and watchers, and Envoy's gRPC server. A data race fails
# the test that ran into it. CI runs it after the sanitizer suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cmake.sh
scripts/install-deps.sh fuzz
CC=clang CXX=clang++ hourglass_configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DHOURGLASS_WERROR=ON \
  -DHOURGLASS_TEST_CODE_FLAGS="-O0;-g1" \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread"
cmake --build build-tsan -j"$(nproc)" --target engine_tests store_tests service_tests rls_tests \
  policy_tests
cd build-tsan
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/../scripts/tsan.supp"
# The suites whose code runs on several threads: concurrent checks and exactness under
# concurrent writers, the hot path's caches, faults; every store against its real server (pools,
# connections, fire-and-forget writes); the service's batcher, listeners, watcher and API; Envoy's
# service and gRPC server.
suites="AtomicConcurrencyTest|CheckAllConcurrency|ConcurrencyTest|ConcurrentExactnessTest|FaultTest"
suites+="|HotPathTest|BlockedCache|BucketCache|StoreContract|ConditionalStoreContract"
suites+="|MemcachedStore[A-Za-z]*|MemcachedPackedLayoutTest|RedisStore[A-Za-z]*|RedisClusterTest"
suites+="|LmdbStoreTest|NetConnection|TransitionStoreTest|CheckBatcherTest|CheckFrontEndTest"
suites+="|HttpServerTest"
suites+="|StoreWatchTest|ClockFollower|DecisionApiTest|EnvoyServiceTest|GrpcServer[A-Za-z]*"
suites+="|StoreLosses|DataLossTest|ReplicatedFaultTest|Periodic|DenialSampler|RecentTop"
ctest --output-on-failure -j"$(nproc)" --timeout 900 -R "(^|/)($suites)\\."
