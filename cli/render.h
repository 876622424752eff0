// Rendering for the CLI: times, sparklines, and the JSON shapes scripts depend on (issue 3's
// contract: keep the names and meanings).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "hourglass/decision.h"
#include "hourglass/engine.h"

namespace hourglass::cli {

// "2015-05-17T10:05:03Z"
std::string FormatTime(Instant t);
// "10:05:03" (with seconds) or "10:05", UTC.
std::string FormatTimeOfDay(Instant t, bool with_seconds);
// One character per value, scaled to the largest: "·" for 0, then ▁▂▃▄▅▆▇█.
std::string Sparkline(std::span<const uint64_t> values);
// Any bytes as JSON text: invalid UTF-8 is replaced (U+FFFD), never a crash.
std::string Dump(const nlohmann::json& j);

// {"allowed","degraded","recorded","retry_after","limits":[{"window","limit","count",
//  "remaining","retry_after","spec","exact","count_min"}],"keys_read","keys_written",
//  "round_trips","cache_hits","blocked_hits"[,"error"]}
// When a limit's "exact" is false, bounds settled the decision: the true count lies in
// [count_min, count].
nlohmann::json DecisionJson(const Decision& d);
// {"event","feature","at","windows":[{"window","count"}],"keys_read","round_trips"}
nlohmann::json CountsJson(std::string_view event, std::string_view feature, const Counts& c);

}  // namespace hourglass::cli
