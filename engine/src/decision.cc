#include "hourglass/decision.h"

#include <algorithm>
#include <numeric>

namespace hourglass {

std::optional<Seconds> RetryAfter(const Limit& limit, Instant t, uint64_t cost,
                                  std::span<const CountedSpan> pieces) {
  if (cost > limit.max_hits) return std::nullopt;
  const uint64_t count =
      std::accumulate(pieces.begin(), pieces.end(), uint64_t{0},
                      [](uint64_t a, const CountedSpan& p) { return a + p.hits; });
  if (count + cost <= limit.max_hits) return Seconds{0};
  if (std::optional<Instant> next = limit.window.NextStart(t)) {
    return *next - t;  // the next window starts empty, and cost <= max_hits
  }
  // Sliding: hits leave as the window's first second passes them. Count a piece as gone only
  // once its last second has left: the window at s starts at s - W + 1.
  const uint64_t must_leave = count + cost - limit.max_hits;
  std::vector<CountedSpan> sorted(pieces.begin(), pieces.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const CountedSpan& a, const CountedSpan& b) { return a.span.last < b.span.last; });
  uint64_t left = 0;
  for (const CountedSpan& piece : sorted) {
    left += piece.hits;
    if (left >= must_leave) {
      return Seconds{piece.span.last + limit.window.length().count() - ToUnix(t)};
    }
  }
  return Seconds{limit.window.length()};  // unreachable: all pieces leave by then
}

}  // namespace hourglass
