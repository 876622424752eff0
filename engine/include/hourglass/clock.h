// Time for hourglass, read from one injected Clock: wall time in whole Unix seconds (UTC) for
// bucket indices, and monotonic time for timeouts, idle checks and latency.
//
// Nothing in hourglass reads the real clock except SystemClock. Tests and replays drive a
// ManualClock:
//
//   hourglass::ManualClock clock(hourglass::Instant{std::chrono::seconds{1700000000}});
//   clock.Advance(std::chrono::seconds{5});  // wall and monotonic time move together
//
// Thread-safety: both clocks may be read and (ManualClock) moved from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hourglass {

using Seconds = std::chrono::seconds;
// A whole second of Unix time. Its count() is the Unix timestamp.
using Instant = std::chrono::sys_seconds;
// A point of monotonic time: only differences mean something.
using MonoTime = std::chrono::steady_clock::time_point;

inline Instant FromUnix(int64_t unix_seconds) { return Instant{Seconds{unix_seconds}}; }
inline int64_t ToUnix(Instant t) { return t.time_since_epoch().count(); }

// The instants hourglass accepts: 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z. Inside them no
// bucket, window or TTL arithmetic can overflow, and every instant prints as an ISO 8601 date.
inline constexpr Instant kFirstInstant{Seconds{0}};
inline constexpr Instant kLastInstant{Seconds{253'402'300'799}};
inline bool InRange(Instant t) { return kFirstInstant <= t && t <= kLastInstant; }

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall time, truncated to whole seconds.
  virtual Instant Now() const = 0;
  // Monotonic time: never goes back, unaffected by wall-clock steps.
  virtual MonoTime Monotonic() const = 0;
};

// The real clocks: std::chrono::system_clock and steady_clock.
class SystemClock final : public Clock {
 public:
  Instant Now() const override;
  MonoTime Monotonic() const override;
  // One process-wide instance, for callers that do not inject a clock.
  static const SystemClock& Get();
};

// Another clock's wall time shifted by a whole number of seconds (set at any time), its monotonic
// time unchanged: for a process that follows a reference clock (its store's) rather than its
// own host's.
class OffsetClock final : public Clock {
 public:
  explicit OffsetClock(const Clock& base) : base_(base) {}
  Instant Now() const override {
    return base_.Now() + Seconds{offset_.load(std::memory_order_relaxed)};
  }
  MonoTime Monotonic() const override { return base_.Monotonic(); }
  void SetOffset(Seconds offset) { offset_.store(offset.count(), std::memory_order_relaxed); }
  Seconds offset() const { return Seconds{offset_.load(std::memory_order_relaxed)}; }

 private:
  const Clock& base_;
  std::atomic<int64_t> offset_{0};
};

// A clock that moves only when told to. Monotonic time starts at steady_clock's epoch and moves
// forward with every Advance and every Set to a later instant.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Instant start) : now_(ToUnix(start)) {}
  Instant Now() const override { return FromUnix(now_.load(std::memory_order_acquire)); }
  MonoTime Monotonic() const override {
    return MonoTime{std::chrono::nanoseconds{mono_ns_.load(std::memory_order_acquire)}};
  }
  void Set(Instant t) {
    const int64_t before = now_.exchange(ToUnix(t), std::memory_order_acq_rel);
    if (ToUnix(t) > before) AdvanceMonotonic(Seconds{ToUnix(t) - before});
  }
  void Advance(Seconds d) {
    now_.fetch_add(d.count(), std::memory_order_acq_rel);
    if (d.count() > 0) AdvanceMonotonic(d);
  }
  // Moves monotonic time only (e.g. milliseconds for a timeout), never wall time.
  void AdvanceMonotonic(std::chrono::nanoseconds d) {
    mono_ns_.fetch_add(d.count(), std::memory_order_acq_rel);
  }

 private:
  std::atomic<int64_t> now_;
  std::atomic<int64_t> mono_ns_{0};
};

}  // namespace hourglass
