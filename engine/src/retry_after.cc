#include "hourglass/retry_after.h"

#include <algorithm>
#include <numeric>

#include "hourglass/saturating.h"

namespace hourglass {

namespace {

// When a hit of `cost` fits under `limit` again, counting each piece's hits as leaving the
// sliding window when its `latest ? last : first` second does.
std::optional<Seconds> Retry(const Limit& limit, Instant t, uint64_t cost,
                             std::span<const CountedSpan> pieces, bool latest) {
  if (cost > limit.max_hits) return std::nullopt;
  const uint64_t count =
      std::accumulate(pieces.begin(), pieces.end(), uint64_t{0},
                      [](uint64_t a, const CountedSpan& p) { return SaturatingAdd(a, p.hits); });
  if (SaturatingAdd(count, cost) <= limit.max_hits) return Seconds{0};
  if (std::optional<Instant> next = limit.window.NextStart(t)) {
    return *next - t;  // the next window starts empty, and cost <= max_hits
  }
  // Sliding: the window at s starts at s - W + 1, so a hit at second h has left once s >= h + W.
  const auto leaves = [latest](const CountedSpan& p) {
    return latest ? p.span.last : p.span.first;
  };
  const uint64_t must_leave = SaturatingAdd(count, cost) - limit.max_hits;
  const auto earlier = [&](const CountedSpan& a, const CountedSpan& b) {
    return leaves(a) < leaves(b);
  };
  // Pieces usually come in time order already: then they are not copied.
  std::vector<CountedSpan> sorted;
  if (!std::is_sorted(pieces.begin(), pieces.end(), earlier)) {
    sorted.assign(pieces.begin(), pieces.end());
    std::sort(sorted.begin(), sorted.end(), earlier);
    pieces = sorted;
  }
  uint64_t left = 0;
  for (const CountedSpan& piece : pieces) {
    left = SaturatingAdd(left, piece.hits);
    if (left >= must_leave) {
      return Seconds{
          std::max<int64_t>(0, leaves(piece) + limit.window.length().count() - ToUnix(t))};
    }
  }
  return Seconds{limit.window.length()};  // unreachable: all pieces leave by then
}

}  // namespace

std::optional<Seconds> RetryAfter(const Limit& limit, Instant t, uint64_t cost,
                                  std::span<const CountedSpan> pieces) {
  return Retry(limit, t, cost, pieces, /*latest=*/true);
}

std::optional<Seconds> EarliestRetry(const Limit& limit, Instant t, uint64_t cost,
                                     std::span<const CountedSpan> pieces) {
  return Retry(limit, t, cost, pieces, /*latest=*/false);
}

}  // namespace hourglass
