#include "top_merge.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace hourglass::cli {
namespace {

// The most a feature this answer does not list can weigh in it.
uint64_t UnlistedAtMost(const ServiceTop& answer) {
  if (answer.rows.size() < answer.asked || answer.rows.empty()) return answer.bound;
  return std::max(answer.bound, answer.rows.back().estimate);
}

}  // namespace

MergedTop MergeTops(std::span<const ServiceTop> answers, size_t n) {
  MergedTop merged;
  struct Sum {
    uint64_t estimate = 0, lower = 0;
    TopRow row;
  };
  std::map<std::string, Sum> sums;
  for (const ServiceTop& answer : answers) {
    merged.total += answer.total;
    merged.bound += UnlistedAtMost(answer);
    for (const TopRow& row : answer.rows) sums[row.feature].row = row;
  }
  for (auto& [key, sum] : sums) {
    const std::string& feature = key;  // a lambda cannot capture a structured binding in C++20
    for (const ServiceTop& answer : answers) {
      const auto it = std::find_if(answer.rows.begin(), answer.rows.end(),
                                   [&](const TopRow& r) { return r.feature == feature; });
      if (it == answer.rows.end()) {
        sum.estimate += UnlistedAtMost(answer);
        continue;
      }
      sum.estimate += it->estimate;
      sum.lower += it->estimate - it->error;
      if (it->last.at > sum.row.last.at) sum.row.last = it->last;
    }
    sum.row.estimate = sum.estimate;
    sum.row.error = sum.estimate - sum.lower;
    merged.rows.push_back(sum.row);
  }
  std::sort(merged.rows.begin(), merged.rows.end(), [](const TopRow& a, const TopRow& b) {
    return std::tie(b.estimate, a.error, a.feature) < std::tie(a.estimate, b.error, b.feature);
  });
  if (merged.rows.size() > n) merged.rows.resize(n);
  return merged;
}

}  // namespace hourglass::cli
