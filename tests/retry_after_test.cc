// Retry-after: 0 when the hit fits, never earlier than the truth (checked against a brute-force
// sliding log on random traces), nullopt when the hit can never fit.
#include "hourglass/retry_after.h"

#include <gtest/gtest.h>

#include <random>

#include "hourglass/decision.h"
#include "hourglass/planner.h"

namespace hourglass {
namespace {

TEST(RetryAfter, ZeroWhenTheHitFits) {
  const Limit limit = *ParseLimit("5/m");
  const std::vector<CountedSpan> pieces = {{Span{941, 1000}, 4}};
  EXPECT_EQ(RetryAfter(limit, FromUnix(1000), 1, pieces), Seconds{0});
}

TEST(RetryAfter, NeverWhenCostExceedsTheLimit) {
  const Limit limit = *ParseLimit("5/m");
  EXPECT_EQ(RetryAfter(limit, FromUnix(1000), 6, {}), std::nullopt);
  const Limit ban = *ParseLimit("0/h");
  EXPECT_EQ(RetryAfter(ban, FromUnix(1000), 1, {}), std::nullopt);
}

TEST(RetryAfter, FixedWindowWaitsForTheNextWindow) {
  const Limit limit{*Window::Fixed(Seconds{60}), 2};
  const std::vector<CountedSpan> pieces = {{Span{960, 1000}, 2}};
  EXPECT_EQ(RetryAfter(limit, FromUnix(1000), 1, pieces), Seconds{20});
}

TEST(RetryAfter, SlidingWaitsUntilTheOldestHitsLeave) {
  const Limit limit = *ParseLimit("2/m");
  // Hits at 950 and 990, now 1000: the hit at 950 leaves the window at 1010 (950 + 60).
  const std::vector<CountedSpan> pieces = {{Span{950, 950}, 1}, {Span{990, 990}, 1}};
  EXPECT_EQ(RetryAfter(limit, FromUnix(1000), 1, pieces), Seconds{10});
}

// Brute force: the true wait is the first s > t at which the window holds room for the cost.
TEST(RetryAfterProperty, NeverTooEarlyAndTightToTheBucket) {
  std::mt19937_64 rng(5);
  const Ladder ladder = Ladder::Default();
  for (int round = 0; round < 2000; ++round) {
    const int64_t now = 1'700'000'000 + static_cast<int64_t>(rng() % 100000);
    const int64_t w = std::vector<int64_t>{1, 10, 60, 600, 3600, 7200}[rng() % 6];
    const Limit limit{*Window::Sliding(Seconds{w}), 1 + rng() % 20};
    std::vector<int64_t> hits;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) hits.push_back(now - static_cast<int64_t>(rng() % (2 * w)));
    const auto count_at = [&](int64_t s) {
      uint64_t c = 0;
      for (int64_t h : hits) c += (h > s - w && h <= s) ? 1 : 0;
      return c;
    };
    const uint64_t cost = 1 + rng() % 3;
    // Pieces as the engine gets them: the planner's live cover with bucket values.
    const Span span = limit.window.SpanAt(FromUnix(now));
    const ReadPlan plan = PlanReads(ladder, {&span, 1}, now);
    std::vector<uint64_t> values;
    for (const Bucket& b : plan.reads) {
      const int64_t bw = ladder.width(b.level).count();
      uint64_t v = 0;
      for (int64_t h : hits) v += (h >= b.index * bw && h < (b.index + 1) * bw) ? 1 : 0;
      values.push_back(v);
    }
    const std::optional<Seconds> wait =
        RetryAfter(limit, FromUnix(now), cost, plan.Pieces(0, values));
    const std::optional<Seconds> earliest =
        EarliestRetry(limit, FromUnix(now), cost, plan.Pieces(0, values));
    if (cost > limit.max_hits) {
      EXPECT_FALSE(wait.has_value());
      EXPECT_FALSE(earliest.has_value());
      continue;
    }
    int64_t truth = 0;
    while (count_at(now + truth) + cost > limit.max_hits) ++truth;
    ASSERT_TRUE(wait.has_value());
    EXPECT_GE(wait->count(), truth) << "too early: limit " << limit.ToString();
    ASSERT_TRUE(earliest.has_value());
    EXPECT_LE(earliest->count(), truth) << "too late: limit " << limit.ToString();
    // Late by less than the widest bucket a sliding window of w can use.
    EXPECT_LT(wait->count() - truth, std::max<int64_t>(w, 1)) << "limit " << limit.ToString();
    if (truth == 0) {
      EXPECT_EQ(wait->count(), 0);
    }
  }
}

// A plan made once answers at every later instant as RetryAfter does, on every kind of window,
// with pieces in time order or not, whether the hit fits, never fits or waits.
TEST(RetryPlanProperty, AnswersAtEveryLaterInstantAsRetryAfterDoes) {
  std::mt19937_64 rng(11);
  const std::vector<Window> windows = {*Window::Sliding(Seconds{1}),
                                       *Window::Sliding(Seconds{60}),
                                       *Window::Sliding(Seconds{86400}),
                                       *Window::Fixed(Seconds{60}),
                                       *Window::Calendar(CalendarUnit::kDay),
                                       *Window::Calendar(CalendarUnit::kMonth, Seconds{3600})};
  for (int round = 0; round < 3000; ++round) {
    const Window& window = windows[rng() % windows.size()];
    const Limit limit{window, rng() % 12};
    const int64_t now = 1'700'000'000 + static_cast<int64_t>(rng() % 100000);
    const int64_t w = window.length().count();
    std::vector<CountedSpan> pieces;
    for (int i = static_cast<int>(rng() % 6); i > 0; --i) {
      const int64_t first = now - static_cast<int64_t>(rng() % static_cast<uint64_t>(w));
      const int64_t last = std::min(now, first + static_cast<int64_t>(rng() % 30));
      pieces.push_back({Span{first, last}, rng() % 5});
    }
    const uint64_t cost = rng() % 4;
    const RetryPlan plan(limit, cost, pieces);
    for (const int64_t later : {int64_t{0}, int64_t{1}, w / 2, w, 2 * w + 7}) {
      const Instant t = FromUnix(now + later);
      EXPECT_EQ(plan.At(limit, t), RetryAfter(limit, t, cost, pieces))
          << limit.ToString() << " cost " << cost << " at +" << later << " s, round " << round;
    }
  }
}

}  // namespace
}  // namespace hourglass
