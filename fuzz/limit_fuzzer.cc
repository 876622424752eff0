// Fuzzes the limit, duration and ladder parsers with arbitrary text: each returns a value or an
// error, never crashes, and what parses prints back to a spec that parses to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hourglass/ladder.h"
#include "hourglass/limit.h"
#include "hourglass/window.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (Result<std::vector<Limit>> limits = ParseLimits(text); limits.ok()) {
    for (const Limit& limit : *limits) {
      if (limit.window.kind() != WindowKind::kSliding) continue;
      Result<Limit> again = ParseLimit(limit.ToString());
      FUZZ_CHECK(again.ok() && *again == limit);
    }
  } else {
    FUZZ_CHECK(!limits.error().message().empty());
  }
  if (Result<Seconds> duration = ParseDuration(text); duration.ok()) {
    FUZZ_CHECK(duration->count() > 0);
  }
  if (Result<Ladder> ladder = Ladder::Parse(text); ladder.ok()) {
    Result<Ladder> again = Ladder::Parse(ladder->ToString());
    FUZZ_CHECK(again.ok() && *again == *ladder);
  }
  return 0;
}
