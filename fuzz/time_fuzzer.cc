// Fuzzes the ISO 8601 parser of --at with arbitrary text: a time or nothing, never a crash, and
// what parses prints back (UTC) to a time that parses to the same second.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<Instant> at = cli::ParseTime(text);
  if (!at || *at < kFirstInstant || *at > kLastInstant) return 0;
  FUZZ_CHECK(cli::ParseTime(cli::FormatTime(*at)) == at);
  return 0;
}
