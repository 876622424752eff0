// The JSON shapes of decisions and counts: what `hourglass check --json` and `count --json` print
// and what the services answer. Scripts depend on the names and meanings; fields are only added.
//
//   nlohmann::json j = DecisionJson(decision);
//   std::string text = Dump(j);  // never throws, whatever bytes the feature had
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hourglass/decision.h"
#include "hourglass/engine.h"

namespace hourglass {

// Any bytes as JSON text: invalid UTF-8 is replaced (U+FFFD), never a crash.
std::string Dump(const nlohmann::json& j);

// {"allowed","at","degraded","recorded","retry_after","limits":[{"window","limit","count",
//  "remaining","retry_after","spec","exact","count_min"}],"keys_read","keys_written",
//  "round_trips","cache_hits","blocked_hits"[,"error"][,"local":true]}
// "at" is the Unix second the hit was decided at: where its increments are.
// When a limit's "exact" is false, bounds settled the decision: the true count lies in
// [count_min, count].
nlohmann::json DecisionJson(const Decision& d);
// Dump(DecisionJson(d)) appended to `out`, byte for byte, written directly (a service writes one
// per request); with `shadow_denied`, also "shadow_denied":true in its place.
void AppendDecisionJson(const Decision& d, bool shadow_denied, std::string& out);
// {"event","feature","at","windows":[{"window","count"}],"keys_read","round_trips"}
nlohmann::json CountsJson(std::string_view event, std::string_view feature, const Counts& c);

}  // namespace hourglass
