// An in-memory Store: the embedded default for a single process, tests and replays.
//
// It follows memcached's semantics (create-at-0 then add, decrements floored at 0, TTL set on
// creation) with expiry against the injected clock, so a replay driven by a ManualClock expires
// buckets exactly as memcached would.
//
//   ManualClock clock(FromUnix(1431856800));
//   MemoryStore store(clock);
//
// It can take conditional batches (Batch::guards) as Redis and LMDB do, when made so: a batch is
// applied under one lock, so its guards, increments and reads are one atomic step.
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
  // `conditional_batches`: take batches with guards (as the atomic stores do).
  explicit MemoryStore(const Clock& clock, bool conditional_batches = false)
      : clock_(clock), conditional_(conditional_batches) {}

  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  bool conditional_batches() const override { return conditional_; }
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
  // The live value of `key`, 0 when missing or expired. Holds mu_.
  uint64_t ValueOf(const std::string& key, Instant now) const;
  // Whether every guard of `batch` holds on the values before its increments. Holds mu_.
  bool GuardsHold(const Batch& batch, Instant now) const;

  const Clock& clock_;
  const bool conditional_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  size_t sweep_at_ = 1024;
};

}  // namespace hourglass
