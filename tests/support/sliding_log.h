// The ground truth for tests: a sorted log of hit seconds (what a Redis sorted-set limiter keeps),
// answering "hits with a < t <= b" exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>

namespace hourglass::testing {

class SlidingLog {
 public:
  void Add(int64_t t, uint64_t cost = 1) { hits_[t] += cost; }
  // Hits with first <= t <= last.
  uint64_t CountIn(int64_t first, int64_t last) const {
    uint64_t n = 0;
    for (auto it = hits_.lower_bound(first); it != hits_.end() && it->first <= last; ++it) {
      n += it->second;
    }
    return n;
  }
  // Hits in the sliding window of `w` seconds ending at `t`.
  uint64_t Window(int64_t t, int64_t w) const { return CountIn(t - w + 1, t); }

 private:
  std::map<int64_t, uint64_t> hits_;
};

}  // namespace hourglass::testing
