// Space-Saving's guarantees, checked against exact counts on random skewed weighted streams.
#include "hourglass/space_saving.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>

namespace hourglass {
namespace {

// Keys drawn from a Zipf-like law over `distinct` keys (weight of rank r ~ 1 / r^skew).
class SkewedKeys {
 public:
  SkewedKeys(int distinct, double skew, uint32_t seed) : rng_(seed) {
    std::vector<double> weights;
    for (int r = 1; r <= distinct; ++r) weights.push_back(1.0 / std::pow(r, skew));
    pick_ = std::discrete_distribution<int>(weights.begin(), weights.end());
  }
  std::string Next() { return "key" + std::to_string(pick_(rng_)); }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
  std::discrete_distribution<int> pick_;
};

TEST(SpaceSaving, EveryEntryBracketsTheTruthAndEveryHeavyKeyIsMonitored) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SkewedKeys keys(2000, seed % 2 == 0 ? 1.1 : 0.7, seed);
    std::uniform_int_distribution<uint64_t> weight(1, 3);
    SpaceSaving summary(64);
    std::map<std::string, uint64_t> truth;
    uint64_t total = 0;
    for (int i = 0; i < 20000; ++i) {
      const std::string key = keys.Next();
      const uint64_t w = weight(keys.rng());
      summary.Add(key, w, {});
      truth[key] += w;
      total += w;
    }
    EXPECT_EQ(summary.total(), total);
    EXPECT_LE(summary.min_count(), total / summary.capacity()) << "seed " << seed;
    const std::vector<SpaceSaving::Entry> entries = summary.Entries();
    ASSERT_EQ(entries.size(), 64u);
    for (size_t i = 0; i < entries.size(); ++i) {
      const SpaceSaving::Entry& e = entries[i];
      EXPECT_LE(truth[e.key], e.count) << e.key << " seed " << seed;
      EXPECT_GE(truth[e.key], e.count - e.error) << e.key << " seed " << seed;
      EXPECT_LE(e.error, summary.min_count());
      EXPECT_GE(entries[i == 0 ? 0 : i - 1].count, e.count) << "heaviest first";
    }
    for (const auto& [key, count] : truth) {
      if (count <= summary.min_count()) continue;
      EXPECT_NE(summary.Find(key), nullptr)
          << key << " weighs " << count << " > min " << summary.min_count() << " seed " << seed;
    }
  }
}

// Weights far apart move a count past many others at once: the bounds hold all the same, and
// the least count is the least of the entries' counts.
TEST(SpaceSaving, TheBoundsHoldWhenWeightsJumpPastOtherCounts) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    SkewedKeys keys(500, 0.9, seed);
    const uint64_t weights[] = {1, 1, 1, 2, 5, 100, 1000};
    std::uniform_int_distribution<size_t> pick(0, std::size(weights) - 1);
    SpaceSaving summary(16);
    std::map<std::string, uint64_t> truth;
    for (int i = 0; i < 5000; ++i) {
      const std::string key = keys.Next();
      const uint64_t w = weights[pick(keys.rng())];
      summary.Add(key, w, {});
      truth[key] += w;
      if (i % 250 != 249) continue;
      const std::vector<SpaceSaving::Entry> entries = summary.Entries();
      ASSERT_EQ(entries.size(), std::min<size_t>(16, truth.size()));
      EXPECT_EQ(summary.min_count(), entries.size() < 16 ? 0 : entries.back().count);
      for (const SpaceSaving::Entry& e : entries) {
        EXPECT_LE(truth[e.key], e.count) << e.key << " seed " << seed;
        EXPECT_GE(truth[e.key], e.count - e.error) << e.key << " seed " << seed;
      }
      for (const auto& [heavy, count] : truth) {
        if (count <= summary.min_count()) continue;
        EXPECT_NE(summary.Find(heavy), nullptr) << heavy << " seed " << seed;
      }
    }
  }
}

// Keys come and go through every counter many times over: a key is found exactly while it is
// monitored, with its own entry.
TEST(SpaceSaving, AKeyIsFoundExactlyWhileItIsMonitored) {
  for (size_t capacity : {1u, 2u, 7u, 64u}) {
    SpaceSaving summary(capacity);
    std::mt19937 rng(static_cast<uint32_t>(capacity));
    std::uniform_int_distribution<int> pick(0, 300);
    std::set<std::string> seen;
    for (int i = 0; i < 20000; ++i) {
      const std::string key = "k" + std::to_string(pick(rng));
      summary.Add(key, 1 + rng() % 3, {});
      seen.insert(key);
      if (i % 1000 != 999) continue;
      std::set<std::string> monitored;
      for (const SpaceSaving::Entry& e : summary.Entries()) monitored.insert(e.key);
      ASSERT_EQ(monitored.size(), std::min<size_t>(capacity, seen.size()));
      for (const std::string& k : seen) {
        const SpaceSaving::Entry* found = summary.Find(k);
        ASSERT_EQ(found != nullptr, monitored.contains(k)) << k << " capacity " << capacity;
        if (found != nullptr) {
          EXPECT_EQ(found->key, k);
        }
      }
    }
  }
}

TEST(SpaceSaving, AnOlderDecisionAddedLaterIsNotTheLast) {
  SpaceSaving summary(2);
  summary.Add("a", 1, {.allowed = false, .at = FromUnix(20)});
  summary.Add("a", 1, {.allowed = true, .at = FromUnix(15)});
  ASSERT_NE(summary.Find("a"), nullptr);
  EXPECT_EQ(summary.Find("a")->count, 2u);
  EXPECT_FALSE(summary.Find("a")->last.allowed);
  EXPECT_EQ(summary.Find("a")->last.at, FromUnix(20));
  summary.Add("a", 1, {.allowed = true, .at = FromUnix(20)});  // as new: the later of equals
  EXPECT_TRUE(summary.Find("a")->last.allowed);
}

TEST(SpaceSaving, ExactWhileCountersAreFreeAndKeepsTheLastDecision) {
  SpaceSaving summary(3);
  summary.Add("a", 2, {.allowed = true, .at = FromUnix(10)});
  summary.Add("b", 1, {.allowed = true, .at = FromUnix(11)});
  summary.Add("a", 1, {.allowed = false, .at = FromUnix(12)});
  EXPECT_EQ(summary.min_count(), 0u) << "a counter is still free";
  ASSERT_NE(summary.Find("a"), nullptr);
  EXPECT_EQ(summary.Find("a")->count, 3u);
  EXPECT_EQ(summary.Find("a")->error, 0u);
  EXPECT_FALSE(summary.Find("a")->last.allowed);
  EXPECT_EQ(summary.Find("a")->last.at, FromUnix(12));
  summary.Add("c", 1, {});
  summary.Add("d", 5, {});  // takes the place of the least (b or c, count 1), inherits 1
  ASSERT_NE(summary.Find("d"), nullptr);
  EXPECT_EQ(summary.Find("d")->count, 6u);
  EXPECT_EQ(summary.Find("d")->error, 1u);
  EXPECT_EQ(summary.Entries().front().key, "d");
  summary.Clear();
  EXPECT_TRUE(summary.Entries().empty());
  EXPECT_EQ(summary.total(), 0u);
}

// A restored summary keeps the heaviest entries, stays a summary (its bounds hold as keys
// arrive), and its total covers what it holds.
TEST(SpaceSaving, ARestoredSummaryKeepsTheHeaviestAndGoesOnAsOne) {
  std::vector<SpaceSaving::Entry> saved = {
      {"a", 9, 1, {}}, {"b", 2, 0, {}}, {"c", 7, 0, {}}, {"d", 5, 2, {}}, {"e", 1, 0, {}}};
  SpaceSaving s = SpaceSaving::Restored(3, saved, 30);
  const std::vector<SpaceSaving::Entry> kept = s.Entries();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].key, "a");
  EXPECT_EQ(kept[1].key, "c");
  EXPECT_EQ(kept[2].key, "d");
  EXPECT_EQ(s.min_count(), 5u);
  EXPECT_EQ(s.total(), 30u);
  s.Add("f", 1, {});  // takes d's counter, inheriting its count as error
  ASSERT_NE(s.Find("f"), nullptr);
  EXPECT_EQ(s.Find("f")->count, 6u);
  EXPECT_EQ(s.Find("f")->error, 5u);
  EXPECT_EQ(s.Find("d"), nullptr);
  EXPECT_EQ(SpaceSaving::Restored(3, saved, 0).total(), 8u + 7u + 3u)
      << "a total below what the entries hold is raised to it";
}

}  // namespace
}  // namespace hourglass
