// The JSON bodies of the decision API's POST calls, parsed and checked before anything is
// counted: a check, a list of checks, a hit, a settlement. Every error names the bad field and
// the form it must take; an unknown or repeated field is refused, never guessed at.
//
//   Result<std::vector<CheckBody>> checks = ParseCheckBodies(R"({"event":"api","feature":"t1",
//       "limits":["100/m","10000/d"]})", 16);
//   Result<SettleBody> settle = ParseSettleBody(R"({"event":"llm","feature":"t1","at":1767225600,
//       "cost":500,"actual":730})");
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/limit.h"
#include "hourglass/status.h"

namespace hourglass {

// {"event","feature","cost","record","limits"} of POST /v1/check (a hit takes the first three).
struct CheckBody {
  std::string event;
  std::string feature;
  uint64_t cost = 1;  // 1 to kMaxHitsPerCall
  // false: decide without counting (a peek: would it fit?).
  bool record = true;
  // Limits the check carries in place of its policy's (["100/m", "10000/d"]); empty: none.
  std::vector<Limit> limits;
};

// {"token","actual"} of POST /v1/settle: the settle_token a check answered (SettleTokens) and the
// decision's true cost (0 to kMaxHitsPerCall).
struct SettleBody {
  std::string token;
  uint64_t actual = 0;
};

// The body as JSON; a key given twice in one object is refused.
Result<nlohmann::json> ParseJsonBody(std::string_view body);
// One check, or {"checks": [...]} of 1 to `max` checks.
Result<std::vector<CheckBody>> ParseCheckBodies(std::string_view body, size_t max);
// ParseCheckBodies' quick reading of the body most checks send: one object of "event", "feature"
// and an optional "cost", strings of printable ASCII without escapes. nullopt for any other body
// (valid or not), which the full parse then reads; a body read here reads the same there.
std::optional<CheckBody> ParsePlainCheckBody(std::string_view body);
// One hit of POST /v1/hit: event, feature and cost only.
Result<CheckBody> ParseHitBody(std::string_view body);
Result<SettleBody> ParseSettleBody(std::string_view body);

}  // namespace hourglass
