// Limits and policies: "at most N hits per window", and an event's set of limits.
//
//   Result<Limit> l = ParseLimit("5/m");              // 5 hits in any sliding minute
//   Result<std::vector<Limit>> ls = ParseLimits("2/s, 5/m, 10/h, 100/d");
//   Policy p{.limits = *ls, .mode = CountingMode::kAdmitted};
//
// Thread-safety: immutable values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"
#include "hourglass/store_fallback.h"
#include "hourglass/window.h"

namespace hourglass {

struct Limit {
  Window window;
  uint64_t max_hits = 0;  // 0 denies every hit (a ban)
  // "5/m", "2/s", "20/10m", "100/fixed 1d", "10000/calendar month Europe/Berlin": parses back
  // with ParseLimit
  std::string ToString() const;
  bool operator==(const Limit&) const = default;
};

// "N/DUR" with DUR as in ParseDuration (e.g. "5/m", "20/10m", "100/d", "7/90", "5/minute"): a
// sliding window; "N/fixed DUR": an epoch-aligned one; "N/calendar UNIT" with UNIT hour, day,
// week, month or year, in UTC, at an offset ("20/calendar day+02:00") or on a zone's clock
// ("10000/calendar month Europe/Berlin"). Errors name the bad part and show a valid example.
Result<Limit> ParseLimit(std::string_view spec);
// Comma- or space-separated specs: "2/s, 5/m, 10/h, 100/d"; Python `limits`' spellings too:
// "5/minute", "5 per minute", "10 per 2 hours", "100/day".
Result<std::vector<Limit>> ParseLimits(std::string_view specs);

enum class CountingMode {
  kAdmitted,  // only admitted hits count; a denied hit's increments are taken back
  kAttempts,  // every attempt counts, admitted or not (keeps a brute-forcer locked out)
};

enum class FailureMode {
  kFailOpen,    // store unreachable: admit, flagged degraded
  kFailClosed,  // store unreachable: deny, flagged degraded
  // store unreachable: decided in this process against a share of each limit, and the hits
  // admitted so written back once the store answers (store_fallback.h); flagged degraded.
  // Without a fallback (EngineOptions::fallback: a CLI call), as closed.
  kLocal,
};

struct Policy {
  std::vector<Limit> limits;
  CountingMode mode = CountingMode::kAdmitted;
  FailureMode on_store_failure = FailureMode::kFailOpen;
  // A penalty: > 0, a live check (at the clock's now) denied by a limit blocks its feature for
  // this long from its instant, for every client of the store; live checks while it is blocked
  // are denied (their hits counted per the mode, as any denial's) and strike nothing more. Checks
  // at past instants neither read nor strike penalties. 0 (the default): no penalty.
  Seconds block_for{0};
  // A check whose windows reach back before a loss the store told of (EngineOptions::losses):
  // open decides on the counts that are left, closed denies until the loss has left those
  // windows (a login or signup limit). Both say so (degraded, kDataLoss). Unset: as
  // as on_store_failure (open when that is local: the counts left are the store's).
  std::optional<FailureMode> on_data_loss{};
  // on_store_failure local: the share of each limit this process admits while the store fails.
  // Unset: the fallback's default (StoreFallback::default_share, one per service).
  std::optional<Share> local_share{};
};

// What a check does when its windows reach back before a data loss (Policy::on_data_loss):
// open or closed.
inline FailureMode DataLossMode(const Policy& policy) {
  const FailureMode mode = policy.on_data_loss.value_or(policy.on_store_failure);
  return mode == FailureMode::kLocal ? FailureMode::kFailOpen : mode;
}

// The longest penalty (Policy::block_for).
constexpr Seconds kMaxBlockFor{400 * 86400};
// Whether `block_for` is a penalty's length, 1s to kMaxBlockFor: the rule the engine and the
// policy loader share. kInvalidArgument otherwise.
Status ValidateBlockFor(Seconds block_for);

// Whether an engine keeping `retention` (EngineOptions::retention) can answer every limit: the
// one rule that checks and the configuration loaders share, so that a policy is refused where it
// is loaded rather than failing every check. kInvalidArgument naming the first limit whose window
// is longer than the retention.
Status ValidateLimits(std::span<const Limit> limits, Seconds retention);

std::string_view CountingModeName(CountingMode mode);  // "admitted" / "attempts"
std::string_view FailureModeName(FailureMode mode);    // "open" / "closed" / "local"
// The inverses; kInvalidArgument naming the text and the valid names.
Result<CountingMode> ParseCountingMode(std::string_view text);
Result<FailureMode> ParseFailureMode(std::string_view text);

}  // namespace hourglass
