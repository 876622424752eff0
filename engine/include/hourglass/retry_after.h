// When a denied hit would fit again: from the pieces of a window's cover and their hit counts.
//
//   std::optional<Seconds> wait = RetryAfter(limit, now, 1, pieces);  // never too early
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "hourglass/clock.h"
#include "hourglass/limit.h"
#include "hourglass/window.h"

namespace hourglass {

// Seconds from `t` until a hit of `cost` fits under `limit`, if nothing else happens.
// `pieces` partition the window at `t` and hold the hits that stay recorded. A hit in a piece is
// assumed to leave a sliding window only when the piece's last second does, so the answer is
// never too early (and late by less than the width of the piece that frees the room).
// 0 when the hit fits now; nullopt when it can never fit (cost > max_hits).
std::optional<Seconds> RetryAfter(const Limit& limit, Instant t, uint64_t cost,
                                  std::span<const CountedSpan> pieces);

// The other side: seconds from `t` before which a hit of `cost` certainly does not fit, if
// nothing else happens (a hit in a piece may leave as early as the piece's first second does).
// `pieces` may under-count. Never later than the truth: a client denied locally until then is
// denied exactly as a perfect limiter would deny it. nullopt when it can never fit.
std::optional<Seconds> EarliestRetry(const Limit& limit, Instant t, uint64_t cost,
                                     std::span<const CountedSpan> pieces);

}  // namespace hourglass
