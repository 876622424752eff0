// `hourglass top`'s merge: several services' /v1/top answers for one event and window, each
// counting only the checks it decided, summed into one ranking with bounds that still hold
// (MergeRankings, the rule RecentTop merges its minutes by).
//
// A feature missing from a service's answer weighs at most that service's `bound` there when the
// answer listed fewer rows than asked for, else at most its last row's estimate: so the merged
// estimate stays an upper bound and estimate - error a lower bound of the feature's total.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hourglass/recent_top.h"

namespace hourglass::cli {

// One service's answer, as GET /v1/top gave it.
struct ServiceTop {
  uint64_t total = 0;
  uint64_t bound = 0;
  size_t asked = 0;          // the n asked for
  std::vector<TopRow> rows;  // heaviest first
};

struct MergedTop {
  uint64_t total = 0;        // exact: every service's total
  uint64_t bound = 0;        // a feature not listed weighs at most this (when not cut by n)
  std::vector<TopRow> rows;  // heaviest first, at most n
};

MergedTop MergeTops(std::span<const ServiceTop> answers, size_t n);

}  // namespace hourglass::cli
