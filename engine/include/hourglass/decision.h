// What a check answers: allowed or not, per limit the count and what remains, and what the call
// cost the store.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/limit.h"
#include "hourglass/status.h"

namespace hourglass {

// What one engine call cost. A round trip is one wait for the store's answer.
struct Cost {
  uint64_t keys_written = 0;  // increments and decrements sent
  uint64_t keys_read = 0;     // keys fetched
  uint64_t round_trips = 0;   // waits for the store
  uint64_t cache_hits = 0;    // bucket values served by the immutable-bucket cache
  uint64_t blocked_hits = 0;  // checks answered by the blocked-client cache (no read)
  // Take-backs of a denied check's increments that failed to send: those hits stay counted (the
  // decision says `recorded`), so the windows read high until they expire.
  uint64_t failed_take_backs = 0;
  Cost& operator+=(const Cost& o) {
    keys_written += o.keys_written;
    keys_read += o.keys_read;
    round_trips += o.round_trips;
    cache_hits += o.cache_hits;
    blocked_hits += o.blocked_hits;
    failed_take_backs += o.failed_take_backs;
    return *this;
  }
  bool operator==(const Cost&) const = default;
};

struct LimitOutcome {
  Limit limit;
  // Hits in the window, including this one if it was recorded. When `exact` is false the
  // decision was settled by bounds: the true count lies in [count_min, count]; or it was answered
  // by the blocked-client cache (Cost::blocked_hits) from the decision that blocked the client,
  // whose count, in attempts mode, misses the attempts other processes recorded since; or the
  // window reaches back before a loss its server told of (store_error kDataLoss), and the count
  // is what the server kept.
  uint64_t count = 0;
  uint64_t remaining = 0;  // max_hits - count, floored at 0
  bool exceeded = false;   // this hit did not fit under this limit
  // Seconds until this hit would fit under this limit if nothing else happened: 0 when it fits,
  // never earlier than the truth (exact to the second when the engine read the store for this
  // decision), nullopt when it can never fit (cost > max_hits).
  std::optional<Seconds> retry_after = Seconds{0};
  bool exact = true;
  uint64_t count_min = 0;  // equals count when exact
  bool operator==(const LimitOutcome&) const = default;
};

struct Decision {
  bool allowed = false;
  bool recorded = false;  // the hit's increments stay in the store
  // The store failed (`allowed` follows the policy's FailureMode, `limits` is empty), or it lost
  // hits the decision needs (kDataLoss: `limits` counts them where it can, see Engine::Check).
  bool degraded = false;
  std::optional<Error> store_error;  // set exactly when degraded
  // The store failed and the policy says on_store_failure local: decided in this process against
  // its share of each limit (`limits` counts the hits decided so here, against the share: not
  // exact); when `recorded`, the hit is held to be written back to the store.
  bool local = false;
  // Per limit, in the policy's order. Empty when the store failed (no count was read), unless
  // decided `local`.
  std::vector<LimitOutcome> limits;
  // The largest retry_after over the limits (0 when allowed; nullopt: never).
  std::optional<Seconds> retry_after = Seconds{0};
  Cost cost;
  // The instant the hit was decided at: where its increments are (see Engine::Unrecord).
  Instant at{};
  // Set when a penalty (Policy::block_for) blocks the feature at `at`: it is denied until then,
  // whatever its counts (retry_after waits for it too).
  std::optional<Instant> blocked_until;
  // Not decided: another binding check of its request was known denied without the store, so
  // the request was denied and this check, which would have recorded nothing, was neither read
  // nor written (Engine::LocalScope::kAnyBindingDenial). `allowed` and `recorded` are false,
  // `limits` is empty, `retry_after` 0: its counts are unknown, not exceeded.
  bool unread = false;
  bool operator==(const Decision&) const = default;
};

}  // namespace hourglass
