// Time for hourglass: whole Unix seconds (UTC), read from an injected Clock.
//
// Nothing in the engine reads the real clock except SystemClock. Tests and replays drive a
// ManualClock:
//
//   hourglass::ManualClock clock(hourglass::Instant{std::chrono::seconds{1700000000}});
//   clock.Advance(std::chrono::seconds{5});
//
// Thread-safety: both clocks may be read and (ManualClock) set from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hourglass {

using Seconds = std::chrono::seconds;
// A whole second of Unix time. Its count() is the Unix timestamp.
using Instant = std::chrono::sys_seconds;

inline Instant FromUnix(int64_t unix_seconds) { return Instant{Seconds{unix_seconds}}; }
inline int64_t ToUnix(Instant t) { return t.time_since_epoch().count(); }

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Instant Now() const = 0;
};

// The real wall clock, truncated to whole seconds.
class SystemClock final : public Clock {
 public:
  Instant Now() const override;
};

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Instant start) : now_(ToUnix(start)) {}
  Instant Now() const override { return FromUnix(now_.load(std::memory_order_acquire)); }
  void Set(Instant t) { now_.store(ToUnix(t), std::memory_order_release); }
  void Advance(Seconds d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace hourglass
