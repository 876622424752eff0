#!/usr/bin/env bash
# The hourglass command's allocator: tcmalloc in a plain build, which prints its statistics at
# exit when MALLOCSTATS asks; glibc's or a sanitizer's otherwise, which ignore MALLOCSTATS.
#   allocator_test.sh HOURGLASS_BINARY tcmalloc|system
set -euo pipefail
binary=$1 expected=$2
out=$(MALLOCSTATS=1 "$binary" --version 2>&1)
if ! grep -q "^hourglass " <<<"$out"; then
  echo "FAIL: $binary --version printed no version" >&2
  exit 1
fi
actual=system
if grep -q "^MALLOC: .*Bytes in use by application" <<<"$out"; then actual=tcmalloc; fi
if [[ "$actual" != "$expected" ]]; then
  echo "FAIL: $binary allocates with $actual, the build asked for $expected" >&2
  exit 1
fi
echo "ok: $binary allocates with $actual"
