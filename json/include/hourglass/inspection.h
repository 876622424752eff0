// What `hourglass inspect` and GET /v1/inspect show of one feature: the last buckets of every
// ladder level up to an instant (60 seconds, 60 minutes, then the retention in hours on the
// default ladder), and the engine's default windows ending there (Engine::DefaultWindows).
//
//   Result<Inspection> i = Inspect(engine, "url_shorten", "203.0.113.7", now);
//   nlohmann::json j = InspectionJson("url_shorten", "203.0.113.7", *i);
//   // {...CountsJson..., "seconds":[...60], "minutes":[...60], "hours":[...24]}, and
//   // "blocked_until" (Unix seconds) while a penalty blocks the feature
//
// Thread-safety: pure functions of the engine's reads.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/engine.h"

namespace hourglass {

// One ladder level's last buckets, oldest first.
struct Timeline {
  size_t level = 0;
  int64_t width = 1;  // seconds
  std::vector<Bucket> buckets;
  std::vector<uint64_t> values;  // values[i] of buckets[i]
};

struct Inspection {
  Instant at;
  std::vector<Timeline> timelines;
  Counts counts;  // Engine::DefaultWindows()
  uint64_t keys_read = 0;
  uint64_t round_trips = 0;
  // When a penalty blocks the feature at `at`: its end (asked with block_for only).
  std::optional<Instant> blocked_until;
};

// Two round trips: the buckets, then the windows' exact covers; a third with `block_for` (the
// policy's penalty length), which reads whether a penalty blocks the feature.
Result<Inspection> Inspect(const Engine& engine, std::string_view event, std::string_view feature,
                           Instant at, Seconds block_for = Seconds{0});

// How a level of `width` is named: "second" (per second, JSON "seconds", "max 3/s"), or for a
// width without a name, its duration ("10s": JSON "per_10s", "max 3/10s").
struct UnitNames {
  std::string unit, json, per;
};
UnitNames NamesOf(int64_t width);

// CountsJson of the windows, plus one array per level named by NamesOf().json.
nlohmann::json InspectionJson(std::string_view event, std::string_view feature,
                              const Inspection& inspection);

}  // namespace hourglass
