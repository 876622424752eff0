#!/usr/bin/env bash
# Compiles the README's C++ example, so the front door never shows code that does not build.
#   readme_example_test.sh CXX SOURCE_DIR
set -euo pipefail
cxx="$1"
src="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo '#include <optional>'
  echo '#include <string>'
  awk '/^```cpp$/{on=1; next} /^```$/{on=0} on && /^#include/' "$src/README.md"
  echo 'using namespace hourglass;'
  echo 'int BadRequest(const std::string&) { return 400; }'
  echo 'void LogWarning(const std::string&) {}'
  echo 'int TooManyRequests(std::optional<Seconds>) { return 429; }'
  echo 'int Handle(const std::string& email) {'
  awk '/^```cpp$/{on=1; next} /^```$/{on=0} on && !/^#include/ && !/^using namespace/' "$src/README.md"
  echo '  return 200;'
  echo '}'
} >"$work/example.cc"
"$cxx" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$src/engine/include" -I"$src/stores/memory/include" -I"$src/stores/factory/include" \
  -I"$src/stores/memcached/include" -I"$src/stores/transition/include" -I"$src/stores/replicated/include" \
  -I"$src/stores/net/include" "$work/example.cc"
echo "README example compiles"
