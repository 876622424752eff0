#include "hourglass/ladder.h"

#include <fmt/format.h>

#include <algorithm>

#include "hourglass/window.h"

namespace hourglass {

Result<Ladder> Ladder::Create(std::vector<Seconds> widths) {
  if (widths.empty()) return InvalidArgument("ladder: no levels; use e.g. 1s,1m,1h");
  if (widths.size() > kMaxLevels) {
    return InvalidArgument(fmt::format("ladder: {} levels, at most {}", widths.size(), kMaxLevels));
  }
  if (widths[0] != Seconds{1}) {
    return InvalidArgument(fmt::format(
        "ladder: the first level must be 1s (got {}) so windows stay exact to the second",
        FormatDuration(widths[0])));
  }
  for (size_t i = 1; i < widths.size(); ++i) {
    if (widths[i] <= widths[i - 1] || widths[i].count() % widths[i - 1].count() != 0) {
      return InvalidArgument(fmt::format(
          "ladder: level {} ({}) must be a multiple of level {} ({}) and larger; e.g. 1s,1m,1h", i,
          FormatDuration(widths[i]), i - 1, FormatDuration(widths[i - 1])));
    }
  }
  return Ladder(std::move(widths));
}

Result<Ladder> Ladder::Parse(std::string_view spec) {
  std::vector<Seconds> widths;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view part = spec.substr(pos, comma - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    Result<Seconds> width = ParseDuration(part);
    if (!width.ok()) {
      return InvalidArgument(fmt::format("ladder \"{}\": {}", spec, width.error().message()));
    }
    widths.push_back(*width);
    pos = comma + 1;
  }
  return Create(std::move(widths));
}

Ladder Ladder::Default() { return Ladder({Seconds{1}, Seconds{60}, Seconds{3600}}); }

Bucket Ladder::BucketAt(size_t level, int64_t t) const {
  return Bucket{static_cast<uint32_t>(level), FloorDiv(t, widths_[level].count())};
}

size_t Ladder::CoverBucketsAtMost(Seconds span) const {
  size_t buckets = static_cast<size_t>(std::max<int64_t>(0, span.count()) / widths_.back().count());
  for (size_t level = 0; level + 1 < widths_.size(); ++level) {
    buckets += 2 * static_cast<size_t>(widths_[level + 1] / widths_[level] - 1);
  }
  return buckets;
}

std::string Ladder::ToString() const {
  std::string out;
  for (Seconds w : widths_) {
    if (!out.empty()) out += ',';
    out += FormatDuration(w);
  }
  return out;
}

}  // namespace hourglass
