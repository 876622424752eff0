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

// RetryAfter's answer worked out once for every later instant alike, while the hit's cost and
// the pieces stay the same: for a sliding window, the second at which the hits that must leave
// have left does not move with `t`. A client denied again and again is answered from it.
class RetryPlan {
 public:
  RetryPlan(const Limit& limit, uint64_t cost, std::span<const CountedSpan> pieces);
  // RetryAfter(limit, t, cost, pieces) for the cost and pieces of the plan, at any `t`; `limit`
  // is the plan's (a fixed or calendar window is asked when its next window starts).
  std::optional<Seconds> At(const Limit& limit, Instant t) const;

 private:
  enum class Kind { kNow, kNever, kAtSecond, kNextWindow };
  Kind kind_ = Kind::kNextWindow;
  int64_t second_ = 0;  // kAtSecond: the Unix second from which the hit fits
};

// The other side: seconds from `t` before which a hit of `cost` certainly does not fit, if
// nothing else happens (a hit in a piece may leave as early as the piece's first second does).
// `pieces` may under-count. Never later than the truth: a client denied locally until then is
// denied exactly as a perfect limiter would deny it. nullopt when it can never fit.
std::optional<Seconds> EarliestRetry(const Limit& limit, Instant t, uint64_t cost,
                                     std::span<const CountedSpan> pieces);

}  // namespace hourglass
