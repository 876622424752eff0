// Text rendering for the CLI: times and sparklines (the JSON shapes live in hourglass/json.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/engine.h"

namespace hourglass::cli {

// "2015-05-17T10:05:03Z"
std::string FormatTime(Instant t);
// An ISO 8601 date and time with its offset, the inverse of FormatTime: "2015-05-17T10:05:03Z",
// "2015-05-17 12:05:03+02:00", "2015-05-17T10:05Z", "...T10:05:03.250Z" (a fraction is dropped:
// instants are whole seconds). nullopt for anything else, a time without an offset included
// (whose zone would be a guess).
std::optional<Instant> ParseTime(std::string_view text);
// "10:05:03" (with seconds) or "10:05", UTC.
std::string FormatTimeOfDay(Instant t, bool with_seconds);
// One character per value, scaled to the largest: "·" for 0, then ▁▂▃▄▅▆▇█.
std::string Sparkline(std::span<const uint64_t> values);
// One line per window: "  1m              6".
std::string CountsText(const Counts& counts);
// A line saying when a penalty ends, if one blocks the feature; "" otherwise.
std::string BlockedText(const std::optional<Instant>& until);

}  // namespace hourglass::cli
