// Fuzzes the loader of envoyproxy/ratelimit configuration files with arbitrary YAML, then matches
// a descriptor built from the same bytes: a config or an error naming the problem, never a crash,
// a hang or an uncaught exception.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "hourglass/envoy_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  Result<EnvoyConfig> config = EnvoyConfig::Parse(yaml, "fuzz.yaml");
  if (!config.ok()) {
    FUZZ_CHECK(!config.error().message().empty());
    return 0;
  }
  // Every domain, with entries cut from the input: keys and values of any bytes.
  std::vector<EnvoyEntry> entries;
  for (size_t i = 0; i + 1 < size && entries.size() < 4; i += size / 4 + 1) {
    entries.push_back({std::string(yaml.substr(i, 1)), std::string(yaml.substr(i, size / 4))});
  }
  for (const std::string& domain : config->domains()) {
    if (std::optional<EnvoyMatch> m = config->Match(domain, entries)) {
      FUZZ_CHECK(m->rate_limit != nullptr && !m->event.empty());
    }
  }
  return 0;
}
