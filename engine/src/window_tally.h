// Internal to the engine: what a check knows of each of its windows, and the coarse bounds that
// often settle a check without the exact cover.
//
// A window's hits lie between the sum of the coarse buckets inside it (lower) and the sum of
// those overlapping it (upper). From an exact cover, lower == upper.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <span>
#include <vector>

#include "hourglass/ladder.h"
#include "hourglass/planner.h"
#include "hourglass/window.h"

namespace hourglass::internal {

struct WindowTally {
  explicit WindowTally(size_t windows)
      : upper(windows), lower(windows), upper_pieces(windows), lower_pieces(windows) {}
  // Window i from an exact cover's pieces.
  void SetExact(size_t i, std::vector<CountedSpan> pieces);

  std::vector<uint64_t> upper, lower;
  // Per window, its pieces in time order: all overlapping buckets (upper), or those inside the
  // window (lower). RetryAfter reads the upper ones, EarliestRetry the lower ones.
  std::vector<std::vector<CountedSpan>> upper_pieces, lower_pieces;
};

// The coarse bounds of one window: the buckets of one level that overlap it.
struct Bound {
  size_t level = 0;
  std::vector<Bucket> buckets;
  bool first_inside = true;  // does the first bucket start inside the window?
};

// The widest level no wider than the span (level 0 for a span shorter than a second's bucket).
Bound BoundFor(const Ladder& ladder, Span span);

// Window i's bounds from `values` of the sorted set `reads` (which holds every bound bucket);
// `t` is the last second a bucket can hold.
void SetBounds(WindowTally& tally, size_t i, const Ladder& ladder, const Bound& bound,
               std::span<const Bucket> reads, std::span<const uint64_t> values, int64_t t);

}  // namespace hourglass::internal
