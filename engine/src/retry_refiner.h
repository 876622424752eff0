// Internal to the engine: retry_after exact to the second on a denial.
//
// For each sliding limit, the piece of its cover whose leaving frees room for the hit is split
// into its child buckets until it is one second wide: one batch per ladder level for all limits
// together, on denials only.
//
// Thread-safety: one RetryRefiner per call, on one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine_core.h"

namespace hourglass::internal {

class RetryRefiner {
 public:
  // `reader` reads the child buckets (with or without the cache, as the check reads).
  RetryRefiner(const EngineCore& core, BucketReader reader, const std::string& group, Instant now)
      : core_(core), reader_(reader), group_(group), now_(now) {}

  // `pieces[i]` are limit i's pieces in time order with actual values, refined in place;
  // `pending` hits at second `t` are about to be taken back. Returns what the reads cost.
  Result<Cost> Refine(const std::vector<Limit>& limits, int64_t t, uint64_t hits, uint64_t pending,
                      std::vector<std::vector<CountedSpan>>& pieces) const;

 private:
  // The index of the piece of `pieces` that frees the room under `limit`, if it is wider than a
  // second.
  std::optional<size_t> Crossing(const Limit& limit, const std::vector<CountedSpan>& pieces,
                                 int64_t t, uint64_t hits, uint64_t pending) const;
  // The widest ladder level narrower than `span` whose buckets tile it.
  size_t ChildLevel(Span span) const;
  // The child buckets of `span` at `level`.
  std::vector<Bucket> Children(Span span, size_t level) const;

  const EngineCore& core_;
  BucketReader reader_;
  const std::string& group_;
  Instant now_;
};

}  // namespace hourglass::internal
