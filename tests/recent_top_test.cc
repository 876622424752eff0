// RecentTop against the truth: per-minute Space-Saving summaries merged over a window keep every
// row's true weight within [estimate - error, estimate] and list every feature heavier than the
// bound; old minutes are forgotten; long features are cut, distinctly; threads lose nothing.
#include "hourglass/recent_top.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <thread>
#include <vector>

namespace hourglass {
namespace {

struct Hit {
  int64_t at;
  std::string feature;
  uint64_t cost;
  bool allowed;
};

// The exact weight of each feature in [from, to], by hits or by denied hits.
std::map<std::string, uint64_t> Truth(const std::vector<Hit>& hits, int64_t from, int64_t to,
                                      TopBy by) {
  std::map<std::string, uint64_t> truth;
  for (const Hit& h : hits) {
    if (h.at < from || h.at > to || (by == TopBy::kDenied && h.allowed)) continue;
    truth[h.feature] += h.cost;
  }
  return truth;
}

// A skewed stream of about 25 minutes of "signup" hits, recorded into `top` (whose last hit is at
// the stream's last .at).
std::vector<Hit> Stream(uint32_t seed, RecentTop& top) {
  constexpr int64_t kStart = 1'800'000'000 - 1'800'000'000 % 60;
  std::mt19937 rng(seed);
  std::vector<double> weights;
  for (int r = 1; r <= 3000; ++r) weights.push_back(1.0 / std::pow(r, 0.9));
  std::discrete_distribution<int> feature(weights.begin(), weights.end());
  std::uniform_int_distribution<int64_t> gap(0, 1);
  std::bernoulli_distribution denied(0.3);
  std::vector<Hit> hits;
  int64_t at = kStart;
  for (int i = 0; i < 30000; ++i) {  // about 25 minutes
    at += i % 20 == 0 ? gap(rng) : 0;
    const int f = feature(rng);
    // The heavy features are denied more, as a limiter would.
    hits.push_back({at, "f" + std::to_string(f), 1 + static_cast<uint64_t>(i % 3 == 0),
                    !(denied(rng) || (f < 5 && i % 2 == 0))});
    top.Record("signup", hits.back().feature, hits.back().cost, hits.back().allowed, FromUnix(at));
  }
  return hits;
}

TEST(RecentTop, MergedMinutesBracketTheTruthAndListEveryFeatureAboveTheBound) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    RecentTop top(32);
    const std::vector<Hit> hits = Stream(seed, top);
    const int64_t at = hits.back().at;
    for (int minutes : {1, 5, 15}) {
      for (TopBy by : {TopBy::kHits, TopBy::kDenied}) {
        const TopAnswer a = top.Query("signup", minutes, by, 1'000'000, FromUnix(at));
        const int64_t from = (at / 60 - minutes + 1) * 60;
        EXPECT_EQ(a.from, FromUnix(from));
        const std::map<std::string, uint64_t> truth = Truth(hits, from, at, by);
        uint64_t total = 0;
        for (const auto& [f, w] : truth) total += w;
        EXPECT_EQ(a.total, total);
        EXPECT_LE(a.bound, minutes * (total / 32 + 1)) << "at most the window's total / capacity";
        std::map<std::string, const TopRow*> listed;
        for (const TopRow& row : a.rows) {
          listed[row.feature] = &row;
          const uint64_t w = truth.contains(row.feature) ? truth.at(row.feature) : 0;
          EXPECT_LE(w, row.estimate) << row.feature << " seed " << seed << " " << minutes << "m";
          EXPECT_GE(w, row.estimate - row.error) << row.feature << " seed " << seed;
        }
        for (const auto& [f, w] : truth) {
          if (w <= a.bound) continue;
          EXPECT_TRUE(listed.contains(f)) << f << " weighs " << w;
        }
        ASSERT_FALSE(a.rows.empty());
        // The heaviest feature of this skewed stream leads, with a guaranteed margin.
        const auto heaviest = std::max_element(
            truth.begin(), truth.end(), [](auto& x, auto& y) { return x.second < y.second; });
        EXPECT_EQ(a.rows.front().feature, heaviest->first) << TopByName(by) << " " << minutes;
      }
    }
  }
}

// What a process saves, a new one restores to the same answers.
TEST(RecentTop, ARestoredTopAnswersAsTheSavedOneDid) {
  for (size_t capacity : {32, 256}) {
    RecentTop top(capacity);
    const std::vector<Hit> hits = Stream(9, top);
    const Instant now = FromUnix(hits.back().at);
    RecentTop restored(capacity);
    restored.Restore(top.Save(), now);
    for (int minutes : {1, 5, 15}) {
      for (TopBy by : {TopBy::kHits, TopBy::kDenied}) {
        const TopAnswer a = top.Query("signup", minutes, by, 50, now);
        const TopAnswer b = restored.Query("signup", minutes, by, 50, now);
        EXPECT_EQ(b.total, a.total) << capacity << " " << minutes;
        EXPECT_EQ(b.bound, a.bound) << capacity << " " << minutes;
        ASSERT_EQ(b.rows.size(), a.rows.size());
        for (size_t i = 0; i < a.rows.size(); ++i) {
          EXPECT_EQ(b.rows[i].feature, a.rows[i].feature) << capacity << " row " << i;
          EXPECT_EQ(b.rows[i].estimate, a.rows[i].estimate) << capacity << " row " << i;
          EXPECT_EQ(b.rows[i].error, a.rows[i].error) << capacity << " row " << i;
        }
      }
    }
  }
}

TEST(RecentTop, TheLastDecisionAndTheWindowsEdges) {
  RecentTop top(8);
  const int64_t t = 1'800'000'020;                         // 20 s into a minute
  top.Record("login", "ann", 1, true, FromUnix(t - 120));  // two minutes before
  top.Record("login", "ann", 1, false, FromUnix(t - 1));   // this minute
  top.Record("login", "bob", 2, true, FromUnix(t));
  TopAnswer one = top.Query("login", 1, TopBy::kHits, 10, FromUnix(t));
  ASSERT_EQ(one.rows.size(), 2u);
  EXPECT_EQ(one.rows[0].feature, "bob");
  EXPECT_EQ(one.rows[0].estimate, 2u);
  EXPECT_EQ(one.rows[1].feature, "ann");
  EXPECT_EQ(one.rows[1].estimate, 1u);
  EXPECT_FALSE(one.rows[1].last.allowed);
  EXPECT_EQ(one.rows[1].last.at, FromUnix(t - 1));
  EXPECT_EQ(top.Query("login", 3, TopBy::kHits, 10, FromUnix(t)).rows[0].estimate, 2u);
  EXPECT_EQ(top.Query("login", 3, TopBy::kHits, 10, FromUnix(t)).total, 4u);
  TopAnswer denied = top.Query("login", 3, TopBy::kDenied, 10, FromUnix(t));
  ASSERT_EQ(denied.rows.size(), 1u);
  EXPECT_EQ(denied.rows[0].feature, "ann");
  EXPECT_EQ(top.Query("login", 3, TopBy::kHits, 1, FromUnix(t)).rows.size(), 1u) << "n rows";
  // Fifteen minutes on, everything has gone round: nothing is reported, and the slots are reused.
  EXPECT_EQ(top.Query("login", 15, TopBy::kHits, 10, FromUnix(t + 16 * 60)).total, 0u);
  top.Record("login", "carol", 1, true, FromUnix(t + 15 * 60));  // ann's and bob's slot
  TopAnswer later = top.Query("login", 15, TopBy::kHits, 10, FromUnix(t + 15 * 60));
  ASSERT_EQ(later.rows.size(), 1u);
  EXPECT_EQ(later.rows[0].feature, "carol");
  EXPECT_TRUE(top.Query("nosuch", 5, TopBy::kHits, 10, FromUnix(t)).rows.empty());
}

TEST(RecentTop, LongFeaturesAreCutDistinctlyAndSaySo) {
  RecentTop top(8);
  const std::string common(400, 'x');
  top.Record("e", common + "1", 1, true, FromUnix(1'800'000'000));
  top.Record("e", common + "2", 1, true, FromUnix(1'800'000'000));
  top.Record("e", common + "2", 1, true, FromUnix(1'800'000'000));
  top.Record("e", std::string(kMaxTopKey, 'y'), 1, true, FromUnix(1'800'000'000));
  const TopAnswer a = top.Query("e", 1, TopBy::kHits, 10, FromUnix(1'800'000'000));
  ASSERT_EQ(a.rows.size(), 3u);
  EXPECT_EQ(a.rows[0].estimate, 2u);
  EXPECT_TRUE(a.rows[0].truncated);
  EXPECT_EQ(a.rows[0].feature.size(), kMaxTopKey + 1);
  EXPECT_NE(a.rows[0].feature, a.rows[1].feature);
  EXPECT_FALSE(a.rows[2].truncated) << "a feature of exactly the limit is kept whole";
  EXPECT_EQ(a.rows[2].feature, std::string(kMaxTopKey, 'y'));
}

TEST(RecentTop, ThreadsRecordingAtOnceLoseNothing) {
  RecentTop top(16);
  const Instant now = FromUnix(1'800'000'000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        top.Record(i % 2 == 0 ? "a" : "b", "f" + std::to_string((i * 7 + t) % 50), 1, i % 3 != 0,
                   now);
      }
    });
  }
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i) (void)top.Query("a", 5, TopBy::kDenied, 5, now);
  });
  for (std::thread& t : threads) t.join();
  reader.join();
  EXPECT_EQ(top.Query("a", 1, TopBy::kHits, 5, now).total, 40000u);
  EXPECT_EQ(top.Query("b", 1, TopBy::kHits, 5, now).total, 40000u);
}

TEST(RecentTop, AQueryCountsWhatEveryThreadRecordedJustBefore) {
  // Fewer decisions per thread than a thread keeps before adding them to the summaries: a query,
  // a save and a restore see them all the same, threads gone or not.
  RecentTop top(8);
  const Instant now = FromUnix(1'800'000'000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) top.Record("signup", t == 0 ? "heavy" : "light", 2, false, now);
    });
  }
  for (std::thread& t : threads) t.join();
  const TopAnswer answer = top.Query("signup", 1, TopBy::kDenied, 1, now);
  EXPECT_EQ(answer.total, 120u);
  ASSERT_EQ(answer.rows.size(), 1u);
  EXPECT_EQ(answer.rows[0].feature, "light");
  EXPECT_EQ(answer.rows[0].estimate, 110u);
  EXPECT_EQ(answer.rows[0].error, 0u);
  top.Record("signup", "heavy", 1, true, now);
  RecentTop restored(8);
  restored.Restore(top.Save(), now);
  EXPECT_EQ(restored.Query("signup", 1, TopBy::kHits, 5, now).total, 121u);
}

TEST(RecentTop, TwoSummariesInOneThreadKeepTheirOwnCounts) {
  const Instant now = FromUnix(1'800'000'000);
  RecentTop first(4), second(4);
  for (int i = 0; i < 100; ++i) {
    (i % 3 == 0 ? first : second).Record("signup", "ann", 1, true, now);
  }
  EXPECT_EQ(first.Query("signup", 1, TopBy::kHits, 5, now).total, 34u);
  EXPECT_EQ(second.Query("signup", 1, TopBy::kHits, 5, now).total, 66u);
  for (int round = 0; round < 3; ++round) {  // a summary made where one was: nothing carried
    RecentTop fresh(4);
    fresh.Record("signup", "bob", 1, false, now);
    EXPECT_EQ(fresh.Query("signup", 1, TopBy::kHits, 5, now).total, 1u);
  }
}

TEST(RecentTop, TheLastDecisionIsTheNewestWhicheverThreadAddsItLast) {
  RecentTop top(4);
  const Instant at = FromUnix(1'800'000'000);
  std::thread([&] { top.Record("signup", "ann", 1, false, at + Seconds{20}); }).join();
  top.Record("signup", "ann", 1, true, at + Seconds{5});
  const TopAnswer answer = top.Query("signup", 1, TopBy::kHits, 1, at + Seconds{30});
  ASSERT_EQ(answer.rows.size(), 1u);
  EXPECT_FALSE(answer.rows[0].last.allowed);
  EXPECT_EQ(answer.rows[0].last.at, at + Seconds{20});
}

}  // namespace
}  // namespace hourglass
