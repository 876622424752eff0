#include "hourglass/retry_after.h"

#include <algorithm>
#include <numeric>

#include "hourglass/saturating.h"

namespace hourglass {

namespace {

// The Unix second from which a hit of `cost` fits under the sliding `limit` again, counting each
// piece's hits as leaving the window when its `latest ? last : first` second does; the pieces
// hold more than the limit leaves room for.
int64_t FitsFrom(const Limit& limit, uint64_t count, uint64_t cost,
                 std::span<const CountedSpan> pieces, bool latest) {
  // The window at s starts at s - W + 1, so a hit at second h has left once s >= h + W.
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
    if (left >= must_leave) return leaves(piece) + limit.window.length().count();
  }
  return pieces.back().span.last + limit.window.length().count();  // unreachable: all have left
}

uint64_t CountOf(std::span<const CountedSpan> pieces) {
  return std::accumulate(pieces.begin(), pieces.end(), uint64_t{0},
                         [](uint64_t a, const CountedSpan& p) { return SaturatingAdd(a, p.hits); });
}

// When a hit of `cost` fits under `limit` again, counting each piece's hits as leaving the
// sliding window when its `latest ? last : first` second does.
std::optional<Seconds> Retry(const Limit& limit, Instant t, uint64_t cost,
                             std::span<const CountedSpan> pieces, bool latest) {
  if (cost > limit.max_hits) return std::nullopt;
  const uint64_t count = CountOf(pieces);
  if (SaturatingAdd(count, cost) <= limit.max_hits) return Seconds{0};
  if (std::optional<Instant> next = limit.window.NextStart(t)) {
    return *next - t;  // the next window starts empty, and cost <= max_hits
  }
  return Seconds{std::max<int64_t>(0, FitsFrom(limit, count, cost, pieces, latest) - ToUnix(t))};
}

}  // namespace

RetryPlan::RetryPlan(const Limit& limit, uint64_t cost, std::span<const CountedSpan> pieces) {
  if (cost > limit.max_hits) {
    kind_ = Kind::kNever;
  } else if (const uint64_t count = CountOf(pieces); SaturatingAdd(count, cost) <= limit.max_hits) {
    kind_ = Kind::kNow;
  } else if (limit.window.kind() == WindowKind::kSliding) {
    kind_ = Kind::kAtSecond;
    second_ = FitsFrom(limit, count, cost, pieces, /*latest=*/true);
  }
}

std::optional<Seconds> RetryPlan::At(const Limit& limit, Instant t) const {
  switch (kind_) {
    case Kind::kNow:
      return Seconds{0};
    case Kind::kNever:
      return std::nullopt;
    case Kind::kAtSecond:
      return Seconds{std::max<int64_t>(0, second_ - ToUnix(t))};
    case Kind::kNextWindow:
      break;
  }
  return *limit.window.NextStart(t) - t;  // the next window starts empty, and cost <= max_hits
}

std::optional<Seconds> RetryAfter(const Limit& limit, Instant t, uint64_t cost,
                                  std::span<const CountedSpan> pieces) {
  return Retry(limit, t, cost, pieces, /*latest=*/true);
}

std::optional<Seconds> EarliestRetry(const Limit& limit, Instant t, uint64_t cost,
                                     std::span<const CountedSpan> pieces) {
  return Retry(limit, t, cost, pieces, /*latest=*/false);
}

}  // namespace hourglass
