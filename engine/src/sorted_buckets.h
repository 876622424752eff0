// Internal to the engine: a read's buckets as a sorted set, and where a bucket sits in it.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "hourglass/ladder.h"

namespace hourglass::internal {

// Sorts `buckets` and drops repeats, so each is read once.
inline void SortUnique(std::vector<Bucket>& buckets) {
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
}

// The position of `bucket` in `sorted` (which holds it).
inline size_t IndexOf(std::span<const Bucket> sorted, const Bucket& bucket) {
  return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), bucket) -
                             sorted.begin());
}

}  // namespace hourglass::internal
