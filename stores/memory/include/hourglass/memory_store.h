// An in-memory Store: the embedded default for a single process, tests and replays.
//
// It follows memcached's semantics (create-at-0 then add, decrements floored at 0, TTL set on
// creation) with expiry against the injected clock, so a replay driven by a ManualClock expires
// buckets exactly as memcached would.
//
//   ManualClock clock(FromUnix(1431856800));
//   MemoryStore store(clock);
//
// Thread-safety: all methods may be called from many threads at once.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "hourglass/clock.h"
#include "hourglass/store.h"

namespace hourglass {

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(const Clock& clock) : clock_(clock) {}

  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  std::string Describe() const override { return "memory"; }

  // Live (unexpired) keys, for tests and memory reports.
  size_t LiveKeys() const;

 private:
  struct Entry {
    uint64_t value = 0;
    Instant expires;
  };
  // Drops expired entries now and then so memory follows the live set. Holds mu_.
  void MaybeSweep(Instant now);

  const Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  size_t sweep_at_ = 1024;
};

}  // namespace hourglass
