#include "top_merge.h"

#include <algorithm>

namespace hourglass::cli {
namespace {

// The most a feature this answer does not list can weigh in it.
uint64_t UnlistedAtMost(const ServiceTop& answer) {
  if (answer.rows.size() < answer.asked || answer.rows.empty()) return answer.bound;
  return std::max(answer.bound, answer.rows.back().estimate);
}

}  // namespace

MergedTop MergeTops(std::span<const ServiceTop> answers, size_t n) {
  std::vector<RankingPart> parts;
  for (const ServiceTop& answer : answers) {
    parts.push_back(
        {.total = answer.total, .unlisted_at_most = UnlistedAtMost(answer), .rows = answer.rows});
  }
  Ranking ranking = MergeRankings(parts, n);
  return {.total = ranking.total, .bound = ranking.bound, .rows = std::move(ranking.rows)};
}

}  // namespace hourglass::cli
