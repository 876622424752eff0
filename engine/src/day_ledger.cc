#include "day_ledger.h"

#include <algorithm>

#include "hourglass/ladder.h"
#include "hourglass/saturating.h"

namespace hourglass::internal {

bool KeepsLedger(std::span<const Limit> limits) {
  return std::any_of(limits.begin(), limits.end(),
                     [](const Limit& l) { return l.window.length() >= kLedgerWindow; });
}

std::optional<int64_t> ComparedDay(const KeySpace& keys, Seconds settle_margin, int64_t second,
                                   std::span<const Span> spans) {
  if (!keys.keeps_ledger()) return std::nullopt;
  const int64_t day = KeySpace::kLedgerSpan.count();
  const int64_t today = FloorDiv(second, day) * day;
  const int64_t top = keys.ladder().width(keys.ladder().levels() - 1).count();
  if (FloorDiv(second + settle_margin.count(), top) != FloorDiv(second, top)) return std::nullopt;
  const bool holds_today =
      std::any_of(spans.begin(), spans.end(), [&](const Span& s) { return s.first <= today; });
  return holds_today ? std::optional(today) : std::nullopt;
}

size_t WindowHoldingDay(std::span<const Span> spans, int64_t today) {
  return static_cast<size_t>(
      std::find_if(spans.begin(), spans.end(), [&](const Span& s) { return s.first <= today; }) -
      spans.begin());
}

uint64_t MissingHits(std::span<const CountedSpan> pieces, int64_t today, uint64_t ledger) {
  uint64_t counted = 0;
  for (const CountedSpan& piece : pieces) {
    if (piece.span.first >= today) counted = SaturatingAdd(counted, piece.hits);
  }
  return ledger > counted ? ledger - counted : 0;
}

}  // namespace hourglass::internal
