#!/usr/bin/env bash
# Fuzzes every parser that reads outside input: the targets in fuzz/, libFuzzer binaries with
# AddressSanitizer and UndefinedBehaviorSanitizer from the sanitizer build (./build-asan, built by
# scripts/build-sanitizers.sh if it is not there yet), each for FUZZ_SECONDS (default 60) starting
# from its corpus in fuzz/corpus/<target>, as many at once as there are cores. CI runs it after
# the sanitizer suite.
#
#   bash scripts/fuzz.sh                      # every target, 60 s each
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh trace_fuzzer
#
# A crash, a leak, a hang past 10 s, a broken property or an uncaught exception fails the run and
# leaves the input in build-asan/findings/<target>/. Once fixed, copy it into
# fuzz/corpus/<target>/ (the test suite replays the corpus) and add a unit test of its own.
# Inputs that reach new code are kept in build-asan/corpus/<target>/; merge the useful ones with
#   build-asan/fuzz/<target> -merge=1 fuzz/corpus/<target> build-asan/corpus/<target>
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(limit_fuzzer policy_fuzzer trace_fuzzer key_codec_fuzzer memcached_reply_fuzzer
    redis_reply_fuzzer envoy_config_fuzzer time_fuzzer top_query_fuzzer request_body_fuzzer)
fi
scripts/build-sanitizers.sh "${targets[@]}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
out=build-asan
# Runs target $1 for $seconds; its log in $out/findings/$1.log, its status in $out/findings/$1.rc.
fuzz_one() {
  local t="$1"
  mkdir -p "$out/corpus/$t" "$out/findings/$t"
  local rc=0
  "$out/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$out/findings/$t/" "$out/corpus/$t" "fuzz/corpus/$t" \
    2>"$out/findings/$t.log" || rc=$?
  echo "$rc" >"$out/findings/$t.rc"
}
jobs_at_once=$(nproc)
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n || true; done
  echo "fuzz: $t for ${seconds}s"
  fuzz_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
  if [[ "$(cat "$out/findings/$t.rc")" != 0 ]]; then
    failed+=("$t")
    echo "fuzz: $t found something:" >&2
    tail -n 60 "$out/findings/$t.log" >&2
  else
    echo "fuzz: $t: $(grep -E '^stat::number_of_executed_units' "$out/findings/$t.log" || true)"
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: findings in ${failed[*]} (inputs in $out/findings/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, nothing found"
