#include "window_tally.h"

#include <algorithm>

#include "hourglass/saturating.h"
#include "sorted_buckets.h"

namespace hourglass::internal {

void WindowTally::SetExact(size_t i, std::vector<CountedSpan> pieces) {
  upper[i] = 0;
  for (const CountedSpan& p : pieces) upper[i] = SaturatingAdd(upper[i], p.hits);
  lower[i] = upper[i];
  upper_pieces[i] = pieces;
  lower_pieces[i] = std::move(pieces);
}

Bound BoundFor(const Ladder& ladder, Span span) {
  Bound bound;
  const int64_t length = span.length();
  for (size_t level = ladder.levels(); level-- > 0;) {
    if (ladder.width(level).count() <= length || level == 0) {
      bound.level = level;
      break;
    }
  }
  const int64_t w = ladder.width(bound.level).count();
  const int64_t first = FloorDiv(span.first, w), last = FloorDiv(span.last, w);
  bound.buckets.reserve(static_cast<size_t>(last - first + 1));
  for (int64_t i = first; i <= last; ++i) {
    bound.buckets.push_back(Bucket{static_cast<uint32_t>(bound.level), i});
  }
  bound.first_inside = first * w >= span.first;
  return bound;
}

void SetBounds(WindowTally& tally, size_t i, const Ladder& ladder, const Bound& bound,
               std::span<const Bucket> reads, std::span<const uint64_t> values, int64_t t) {
  const int64_t w = ladder.width(bound.level).count();
  tally.upper_pieces[i].reserve(bound.buckets.size());
  tally.lower_pieces[i].reserve(bound.buckets.size());
  for (size_t k = 0; k < bound.buckets.size(); ++k) {
    const Bucket& b = bound.buckets[k];
    const uint64_t v = values[IndexOf(reads, b)];
    const Span bucket_span{b.index * w, std::min(b.index * w + w - 1, t)};
    tally.upper[i] = SaturatingAdd(tally.upper[i], v);
    tally.upper_pieces[i].push_back(CountedSpan{bucket_span, v});
    if (k > 0 || bound.first_inside) {
      tally.lower[i] = SaturatingAdd(tally.lower[i], v);
      tally.lower_pieces[i].push_back(CountedSpan{bucket_span, v});
    }
  }
}

}  // namespace hourglass::internal
