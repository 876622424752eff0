#!/usr/bin/env bash
# Fuzzes every parser that reads outside input: builds the targets in fuzz/ with clang, libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer into ./build-fuzz, then runs each for
# FUZZ_SECONDS (default 60) starting from its corpus in fuzz/corpus/<target>. CI runs it after
# the test suite.
#
#   bash scripts/fuzz.sh                      # every target, 60 s each
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh trace_fuzzer
#
# A crash, a leak, a hang past 10 s, a broken property or an uncaught exception fails the run and
# leaves the input in build-fuzz/findings/<target>/. Once fixed, copy it into
# fuzz/corpus/<target>/ (the test suite replays the corpus) and add a unit test of its own.
# Inputs that reach new code are kept in build-fuzz/corpus/<target>/; merge the useful ones with
#   build-fuzz/fuzz/<target> -merge=1 fuzz/corpus/<target> build-fuzz/corpus/<target>
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh fuzz
seconds="${FUZZ_SECONDS:-60}"
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(limit_fuzzer policy_fuzzer trace_fuzzer key_codec_fuzzer memcached_reply_fuzzer
    redis_reply_fuzzer envoy_config_fuzzer time_fuzzer top_query_fuzzer request_body_fuzzer)
fi
sanitizers="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOURGLASS_WERROR=ON -DHOURGLASS_FUZZ=ON -DHOURGLASS_BUILD_TESTS=OFF -DHOURGLASS_INSTALL=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $sanitizers" \
  -DCMAKE_EXE_LINKER_FLAGS="$sanitizers" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  echo "fuzz: $t for ${seconds}s"
  if ! "build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$t/" \
      "build-fuzz/corpus/$t" "fuzz/corpus/$t" 2>"build-fuzz/findings/$t.log"; then
    failed+=("$t")
    tail -n 60 "build-fuzz/findings/$t.log" >&2
  else
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "build-fuzz/findings/$t.log" || true
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: findings in ${failed[*]} (inputs in build-fuzz/findings/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, nothing found"
