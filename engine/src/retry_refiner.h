// Internal to the engine: retry_after exact to the second on a denial.
//
// For each sliding limit, the piece of its cover whose leaving frees room for the hit is split
// into its child buckets until it is one second wide: one read per ladder level for all limits
// together, on denials only. The refiner says what to read; its caller sends the reads (with the
// rest of a batch of checks) and hands the values back:
//
//   RetryRefiner refiner(ladder, limits, t, hits, pending, pieces);
//   for (auto reads = refiner.NextReads(); !reads.empty(); reads = refiner.NextReads()) {
//     refiner.Split(values of `reads`);
//   }
//
// Thread-safety: one RetryRefiner per check, on one thread.
#pragma once

#include <optional>
#include <vector>

#include "hourglass/ladder.h"
#include "hourglass/limit.h"
#include "window_tally.h"

namespace hourglass::internal {

class RetryRefiner {
 public:
  // `pieces[i]` are limits[i]'s pieces in time order with actual values, refined in place;
  // `pending` hits at second `t` are about to be taken back. Every argument must outlive the
  // refiner.
  RetryRefiner(const Ladder& ladder, const std::vector<Limit>& limits, int64_t t, uint64_t hits,
               uint64_t pending, std::vector<std::vector<CountedSpan>>& pieces)
      : ladder_(ladder), limits_(limits), t_(t), hits_(hits), pending_(pending), pieces_(pieces) {}

  // The buckets the next round reads, sorted and distinct; empty when refining is done (no piece
  // to split, or one round per ladder level was read).
  std::vector<Bucket> NextReads();
  // Splits the pieces with values[k] of NextReads()[k].
  void Split(const std::vector<uint64_t>& values);

 private:
  // The index of the piece of `pieces` that frees the room under `limit`, if it is wider than a
  // second.
  std::optional<size_t> Crossing(const Limit& limit, const std::vector<CountedSpan>& pieces) const;
  // The widest ladder level narrower than `span` whose buckets tile it.
  size_t ChildLevel(Span span) const;
  // The child buckets of `span` at `level`.
  std::vector<Bucket> Children(Span span, size_t level) const;

  const Ladder& ladder_;
  const std::vector<Limit>& limits_;
  const int64_t t_;
  const uint64_t hits_, pending_;
  std::vector<std::vector<CountedSpan>>& pieces_;
  size_t rounds_ = 0;
  // The round in flight: per limit, the piece to split and its children; all reads.
  std::vector<std::optional<size_t>> split_;
  std::vector<std::vector<Bucket>> children_;
  std::vector<Bucket> reads_;
};

}  // namespace hourglass::internal
