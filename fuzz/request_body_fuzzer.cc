// Fuzzes the decision API's POST bodies (a check or a list, a hit, a settlement) with arbitrary
// bytes: parsed whole into values within their bounds, or refused with an error naming the
// problem, never a crash; a parsed check written back as JSON parses to the same check.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "hourglass/engine.h"
#include "hourglass/request_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Result<std::vector<CheckBody>> checks = ParseCheckBodies(text, 16);
  if (checks.ok()) {
    FUZZ_CHECK(!checks->empty() && checks->size() <= 16);
    for (const CheckBody& c : *checks) {
      FUZZ_CHECK(!c.event.empty());
      FUZZ_CHECK(c.cost >= 1 && c.cost <= kMaxHitsPerCall);
      const nlohmann::json again = {
          {"event", c.event}, {"feature", c.feature}, {"cost", c.cost}, {"record", c.record}};
      const Result<std::vector<CheckBody>> reparsed = ParseCheckBodies(again.dump(), 16);
      FUZZ_CHECK(reparsed.ok() && reparsed->size() == 1);
      const CheckBody& r = reparsed->front();
      FUZZ_CHECK(r.event == c.event && r.feature == c.feature && r.cost == c.cost &&
                 r.record == c.record);
    }
  } else {
    FUZZ_CHECK(!checks.error().message().empty());
  }
  const Result<CheckBody> hit = ParseHitBody(text);
  FUZZ_CHECK(hit.ok() ? hit->record && hit->limits.empty() : !hit.error().message().empty());
  const Result<SettleBody> settle = ParseSettleBody(text);
  if (settle.ok()) {
    FUZZ_CHECK(!settle->token.empty());
    FUZZ_CHECK(settle->actual <= kMaxHitsPerCall);
  } else {
    FUZZ_CHECK(!settle.error().message().empty());
  }
  return 0;
}
