// The limiters the accuracy benchmark replays side by side, each keeping its own state, all in
// admitted mode (only admitted hits are counted), all deciding the same sliding-window policy:
//
// - Hourglass:       the engine on a store (exact);
// - SlidingLog:      a sorted log of admitted hits per feature (a Redis sorted set; exact, memory
//                    grows with hits);
// - FixedWindow:     one counter per limit and clock-aligned window (envoy ratelimit);
// - SlidingCounter:  prev * (1 - elapsed/W) + current (Cloudflare, limits' estimate);
// - CoarseBuckets:   the window summed from the last W/b buckets of a coarser width b (the
//                    first answer: seconds for a minute, minutes for an hour, hours for a day);
// - FirstAccess:     a counter per limit that restarts when now - start >= W: a fixed window
//                    that starts at a client's first hit (Python limits' fixed window on
//                    memcached or Redis, rate-limiter-flexible, limitador).
//
// Thread-safety: none; one replay drives one limiter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "hourglass/engine.h"

namespace hourglass::bench {

// The peers' names in tables and charts: what each algorithm is, and who uses it.
inline constexpr const char* kFixedWindowName = "fixed window, clock-aligned (envoy ratelimit)";
inline constexpr const char* kFirstAccessName =
    "fixed window from the first hit (Python limits, rate-limiter-flexible, limitador)";

struct Request {
  int64_t t = 0;
  uint32_t feature = 0;
  uint64_t cost = 1;
};

class Limiter {
 public:
  virtual ~Limiter() = default;
  virtual std::string name() const = 0;
  // Decides `r`. estimates[i] = the count the limiter believes limit i's window holds before this
  // request; lows[i] = the lowest it believes possible, for limiters that report bounds (hourglass,
  // when bounds settled a decision). A limiter that leaves lows[i] NaN means lows = estimates.
  virtual bool Decide(const Request& r, std::vector<double>& estimates,
                      std::vector<double>& lows) = 0;
  // Keys (store entries) alive at `now`: what the store holds for this limiter.
  virtual uint64_t StoredKeys(int64_t now) = 0;
  uint64_t keys_read = 0;
  uint64_t keys_written = 0;
  uint64_t round_trips = 0;   // hourglass only: waits for the store
  uint64_t cache_hits = 0;    // hourglass only: bucket values from the immutable-bucket cache
  uint64_t blocked_hits = 0;  // hourglass only: checks answered by the blocked-client cache
  std::vector<uint64_t> keys_read_per_decision;  // hourglass only, for percentiles
};

// The engine on `store` (in-memory or memcached), driven by `clock`.
std::unique_ptr<Limiter> MakeHourglass(const std::string& name, Store& store, ManualClock& clock,
                                       const std::vector<Limit>& limits,
                                       std::function<uint64_t()> stored_keys,
                                       const EngineOptions& options);
// The engine behind Envoy's ShouldRateLimit (EnvoyService), asked over a gRPC channel on
// loopback; the policy as one descriptor per limit (each window a second, minute, hour or day).
// Keys read and stored are not seen through the protocol (reported as 0).
std::unique_ptr<Limiter> MakeEnvoyGrpc(const std::string& name, Store& store, ManualClock& clock,
                                       const std::vector<Limit>& limits,
                                       const EngineOptions& options);
// The engine's configurations: every check reads its exact cover (no hot path), or the hot
// path (bounds, immutable-bucket cache, blocked-client cache).
EngineOptions ExactCoverOptions();
EngineOptions HotPathEngineOptions();
std::unique_ptr<Limiter> MakeSlidingLog(const std::vector<Limit>& limits);
std::unique_ptr<Limiter> MakeFixedWindow(const std::vector<Limit>& limits);
std::unique_ptr<Limiter> MakeSlidingCounter(const std::vector<Limit>& limits);
std::unique_ptr<Limiter> MakeCoarseBuckets(const std::vector<Limit>& limits);
std::unique_ptr<Limiter> MakeFirstAccess(const std::vector<Limit>& limits);

}  // namespace hourglass::bench
