#include "hourglass/inspection.h"

#include <algorithm>

#include "hourglass/json.h"

namespace hourglass {
namespace {

std::vector<Timeline> Timelines(const Engine& engine, int64_t now) {
  const Ladder& ladder = engine.options().ladder;
  std::vector<Timeline> timelines;
  for (size_t level = 0; level < ladder.levels(); ++level) {
    const int64_t w = ladder.width(level).count();
    const int64_t reach = level + 1 < ladder.levels() ? ladder.width(level + 1).count()
                                                      : engine.options().retention.count();
    Timeline timeline{level, w, {}, {}};
    for (int64_t i = std::max<int64_t>(1, reach / w) - 1; i >= 0; --i) {
      timeline.buckets.push_back(ladder.BucketAt(level, now - w * i));
    }
    timelines.push_back(std::move(timeline));
  }
  return timelines;
}

}  // namespace

Result<Inspection> Inspect(const Engine& engine, std::string_view event, std::string_view feature,
                           Instant at, Seconds block_for) {
  Inspection inspection{at, Timelines(engine, ToUnix(at)), {}, 0, 0, std::nullopt};
  std::vector<Bucket> buckets;
  for (const Timeline& timeline : inspection.timelines) {
    buckets.insert(buckets.end(), timeline.buckets.begin(), timeline.buckets.end());
  }
  Result<Engine::BucketValues> read = engine.ReadBuckets(event, feature, buckets);
  if (!read.ok()) return read.error();
  size_t offset = 0;
  for (Timeline& timeline : inspection.timelines) {
    const auto first = read->values.begin() + static_cast<long>(offset);
    timeline.values.assign(first, first + static_cast<long>(timeline.buckets.size()));
    offset += timeline.buckets.size();
  }
  Result<Counts> counts = engine.Count(event, feature, engine.DefaultWindows(), at);
  if (!counts.ok()) return counts.error();
  inspection.counts = std::move(*counts);
  inspection.keys_read = read->cost.keys_read + inspection.counts.cost.keys_read;
  inspection.round_trips = read->cost.round_trips + inspection.counts.cost.round_trips;
  if (block_for > Seconds{0}) {
    Result<std::optional<Instant>> until = engine.BlockedUntil(event, feature, block_for, at);
    if (!until.ok()) return until.error();
    inspection.blocked_until = *until;
    inspection.keys_read += 2;
    inspection.round_trips += 1;
  }
  return inspection;
}

UnitNames NamesOf(int64_t width) {
  switch (width) {
    case 1:
      return {"second", "seconds", "/s"};
    case 60:
      return {"minute", "minutes", "/min"};
    case 3600:
      return {"hour", "hours", "/h"};
    case 86400:
      return {"day", "days", "/1d"};
    default: {
      const std::string d = FormatDuration(Seconds{width});
      return {d, "per_" + d, "/" + d};
    }
  }
}

nlohmann::json InspectionJson(std::string_view event, std::string_view feature,
                              const Inspection& inspection) {
  nlohmann::json j = CountsJson(event, feature, inspection.counts);
  for (const Timeline& timeline : inspection.timelines) {
    j[NamesOf(timeline.width).json] = timeline.values;
  }
  j["keys_read"] = inspection.keys_read;
  j["round_trips"] = inspection.round_trips;
  if (inspection.blocked_until) j["blocked_until"] = ToUnix(*inspection.blocked_until);
  return j;
}

}  // namespace hourglass
