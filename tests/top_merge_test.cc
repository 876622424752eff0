// `hourglass top`'s merge of several services' answers, against the truth: traffic split across
// three RecentTop summaries (three services), each asked for its top n, merged.
#include "top_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>

namespace hourglass::cli {
namespace {

TEST(MergeTops, MergedRowsBracketTheTruthAcrossServices) {
  const Instant now = FromUnix(1'800'000'000);
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    std::mt19937 rng(seed);
    std::vector<double> weights;
    for (int r = 1; r <= 2000; ++r) weights.push_back(1.0 / std::pow(r, 1.0));
    std::discrete_distribution<int> feature(weights.begin(), weights.end());
    std::uniform_int_distribution<int> service(0, 2);
    std::vector<std::unique_ptr<RecentTop>> services;
    for (int s = 0; s < 3; ++s) services.push_back(std::make_unique<RecentTop>(32));
    std::map<std::string, uint64_t> truth;
    for (int i = 0; i < 20000; ++i) {
      const std::string f = "f" + std::to_string(feature(rng));
      // Some clients stick to one service (a proxy's affinity), the rest spread.
      const int s = f.size() == 2 ? f[1] % 3 : service(rng);
      services[static_cast<size_t>(s)]->Record("e", f, 1, false, now);
      ++truth[f];
    }
    const size_t n = seed % 2 == 0 ? 10 : 1000;
    std::vector<ServiceTop> answers;
    for (const auto& top : services) {
      const TopAnswer a = top->Query("e", 5, TopBy::kDenied, n, now);
      answers.push_back({a.total, a.bound, n, a.rows});
    }
    const MergedTop merged = MergeTops(answers, n);
    EXPECT_EQ(merged.total, 20000u);
    ASSERT_FALSE(merged.rows.empty());
    EXPECT_LE(merged.rows.size(), n);
    for (const TopRow& row : merged.rows) {
      EXPECT_LE(truth[row.feature], row.estimate) << row.feature << " seed " << seed;
      EXPECT_GE(truth[row.feature], row.estimate - row.error) << row.feature << " seed " << seed;
    }
    if (n == 1000) {
      for (const auto& [name, weight] : truth) {
        if (weight <= merged.bound) continue;
        const std::string& f = name;  // a lambda captures no structured binding in clang 14
        EXPECT_TRUE(std::any_of(merged.rows.begin(), merged.rows.end(),
                                [&](const TopRow& r) { return r.feature == f; }))
            << f << " weighs " << weight << " > bound " << merged.bound;
      }
    }
    EXPECT_EQ(merged.rows.front().feature, "f0") << "the heaviest client leads";
  }
}

TEST(MergeTops, TheLastDecisionIsTheNewestOfAnyService) {
  ServiceTop a{.total = 3, .bound = 0, .asked = 5, .rows = {}};
  a.rows.push_back({"ann", false, 3, 0, {.allowed = false, .at = FromUnix(100)}});
  ServiceTop b{.total = 2, .bound = 0, .asked = 5, .rows = {}};
  b.rows.push_back({"ann", false, 1, 0, {.allowed = true, .at = FromUnix(105)}});
  b.rows.push_back({"bob", false, 1, 0, {.allowed = true, .at = FromUnix(101)}});
  const std::vector<ServiceTop> answers = {a, b};
  const MergedTop merged = MergeTops(answers, 5);
  ASSERT_EQ(merged.rows.size(), 2u);
  EXPECT_EQ(merged.rows[0].feature, "ann");
  EXPECT_EQ(merged.rows[0].estimate, 4u);
  EXPECT_EQ(merged.rows[0].error, 0u);
  EXPECT_TRUE(merged.rows[0].last.allowed);
  EXPECT_EQ(merged.rows[0].last.at, FromUnix(105));
  EXPECT_EQ(merged.rows[1].estimate, 1u) << "both answers were complete: bob is exact";
}

}  // namespace
}  // namespace hourglass::cli
