// The day ledger's comparison (KeySpace::Ledger), shared by checks and counts (internal): which
// reads compare today's buckets with the ledger, and how many of today's hits the buckets lack.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "hourglass/clock.h"
#include "hourglass/key_space.h"
#include "hourglass/limit.h"
#include "hourglass/window.h"

namespace hourglass::internal {

// The shortest window whose checks keep the day ledger.
constexpr Seconds kLedgerWindow{3600};

// Whether checks of `limits` keep the day ledger (count their hits in it and compare it): some
// window lasts kLedgerWindow or longer. A shorter window holds all of a day only in that day's
// first minutes; the ledger would cost such checks two writes per hit, and a feature two items a
// day, for a comparison they almost never make.
bool KeepsLedger(std::span<const Limit> limits);

// The first second of the UTC day of `second` (Unix seconds) when a live read of `spans` at
// `second` compares today's buckets with the day ledger: the key space keeps ledgers, some span
// holds all of today, and `second` is not within `settle_margin` of the end of a top-level
// bucket (a writer whose clock runs ahead may count into the next one, which is not read, and
// into the ledger). Otherwise nullopt.
std::optional<int64_t> ComparedDay(const KeySpace& keys, Seconds settle_margin, int64_t second,
                                   std::span<const Span> spans);

// The window among `spans` whose pieces are compared with the ledger: the first that holds all of
// the day starting at `today`. Precondition: one does (ComparedDay gave `today`).
size_t WindowHoldingDay(std::span<const Span> spans, int64_t today);

// How many of the day's net hits `ledger` counts that `pieces` lack: `pieces` tile a window that
// holds all of the day starting at `today`, so its pieces from `today` on hold every hit of it.
uint64_t MissingHits(std::span<const CountedSpan> pieces, int64_t today, uint64_t ledger);

}  // namespace hourglass::internal
