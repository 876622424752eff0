#include "retry_refiner.h"

#include <algorithm>

#include "saturating.h"
#include "sorted_buckets.h"

namespace hourglass::internal {

std::optional<size_t> RetryRefiner::Crossing(const Limit& limit,
                                             const std::vector<CountedSpan>& pieces, int64_t t,
                                             uint64_t hits, uint64_t pending) const {
  if (limit.window.kind() != WindowKind::kSliding || hits > limit.max_hits) return std::nullopt;
  const auto stays = [&](const CountedSpan& p) {
    return p.span.Contains(t) ? p.hits - std::min(p.hits, pending) : p.hits;
  };
  uint64_t total = 0;
  for (const CountedSpan& p : pieces) total = SatAdd(total, stays(p));
  if (SatAdd(total, hits) <= limit.max_hits) return std::nullopt;
  // Hits leave in time order: the running sum of the oldest reaches what must leave.
  const uint64_t must_leave = SatAdd(total, hits) - limit.max_hits;
  uint64_t left = 0;
  size_t k = 0;
  while (k < pieces.size() && (left = SatAdd(left, stays(pieces[k]))) < must_leave) ++k;
  if (k == pieces.size() || pieces[k].span.length() <= 1) return std::nullopt;
  return k;
}

size_t RetryRefiner::ChildLevel(Span span) const {
  const Ladder& ladder = core_.keys.ladder();
  for (size_t l = ladder.levels(); l-- > 0;) {
    const int64_t w = ladder.width(l).count();
    if (w < span.length() && FloorDiv(span.first, w) * w == span.first) return l;
  }
  return 0;
}

std::vector<Bucket> RetryRefiner::Children(Span span, size_t level) const {
  const Ladder& ladder = core_.keys.ladder();
  const int64_t w = ladder.width(level).count();
  std::vector<Bucket> children;
  for (int64_t s = FloorDiv(span.first, w) * w; s <= span.last; s += w) {
    children.push_back(ladder.BucketAt(level, s));
  }
  return children;
}

Result<Cost> RetryRefiner::Refine(const std::vector<Limit>& limits, int64_t t, uint64_t hits,
                                  uint64_t pending,
                                  std::vector<std::vector<CountedSpan>>& pieces) const {
  Cost spent;
  const Ladder& ladder = core_.keys.ladder();
  for (size_t round = 0; round < ladder.levels(); ++round) {
    // Per limit, the piece that frees the room and its child buckets, if it is to be split.
    std::vector<std::optional<size_t>> split(limits.size());
    std::vector<std::vector<Bucket>> children(limits.size());
    std::vector<Bucket> reads;
    for (size_t i = 0; i < limits.size(); ++i) {
      split[i] = Crossing(limits[i], pieces[i], t, hits, pending);
      if (!split[i]) continue;
      const Span span = pieces[i][*split[i]].span;
      children[i] = Children(span, ChildLevel(span));
      reads.insert(reads.end(), children[i].begin(), children[i].end());
    }
    if (reads.empty()) break;
    SortUnique(reads);
    Result<BucketRead> read = reader_.Read(group_, reads, {}, now_);
    if (!read.ok()) return read.error();
    spent += read->cost;
    for (size_t i = 0; i < limits.size(); ++i) {
      if (!split[i]) continue;
      // The window's first second: children wholly before it are gone, the one across it is cut.
      const int64_t first_second = t - limits[i].window.length().count() + 1;
      const Span span = pieces[i][*split[i]].span;
      std::vector<CountedSpan> counted;
      for (const Bucket& b : children[i]) {
        const int64_t w = ladder.width(b.level).count();
        const int64_t s = b.index * w;
        const Span child{std::max(s, first_second), std::min(s + w - 1, span.last)};
        if (child.last < first_second) continue;
        counted.push_back(CountedSpan{child, read->values[IndexOf(reads, b)]});
      }
      auto& p = pieces[i];
      p.erase(p.begin() + static_cast<long>(*split[i]));
      p.insert(p.begin() + static_cast<long>(*split[i]), counted.begin(), counted.end());
    }
  }
  return spent;
}

}  // namespace hourglass::internal
