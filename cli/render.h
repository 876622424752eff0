// Text rendering for the CLI: times and sparklines (the JSON shapes live in hourglass/json.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "hourglass/clock.h"
#include "hourglass/engine.h"

namespace hourglass::cli {

// "2015-05-17T10:05:03Z"
std::string FormatTime(Instant t);
// "10:05:03" (with seconds) or "10:05", UTC.
std::string FormatTimeOfDay(Instant t, bool with_seconds);
// One character per value, scaled to the largest: "·" for 0, then ▁▂▃▄▅▆▇█.
std::string Sparkline(std::span<const uint64_t> values);
// One line per window: "  1m              6".
std::string CountsText(const Counts& counts);

}  // namespace hourglass::cli
