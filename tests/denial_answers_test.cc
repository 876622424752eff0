// A denial's answer from the memo is exactly what rendering the decision gives.
#include "hourglass/denial_answers.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "hourglass/json.h"

namespace hourglass {
namespace {

DenialAnswers::Answer Rendered(const Decision& d) {
  DenialAnswers::Answer a;
  AppendDecisionJson(d, /*shadow_denied=*/false, a.json);
  a.fields = RateLimitFieldsFor(d);
  return a;
}

void ExpectSame(const DenialAnswers::Answer& got, const DenialAnswers::Answer& want) {
  EXPECT_EQ(got.json, want.json);
  EXPECT_EQ(got.fields.policy, want.fields.policy);
  EXPECT_EQ(got.fields.current, want.fields.current);
  EXPECT_EQ(got.fields.retry_after, want.fields.retry_after);
}

// Denials a few of which differ in one field only, some in a field the slot's hash leaves out.
std::vector<Decision> Denials(std::mt19937_64& rng, size_t n) {
  const std::vector<Limit> limits = {*ParseLimit("2/s"), *ParseLimit("5/m"), *ParseLimit("10/h"),
                                     *ParseLimit("100/d"), Limit{*Window::Fixed(Seconds{60}), 2}};
  std::vector<Decision> out;
  for (size_t k = 0; k < n; ++k) {
    if (!out.empty() && rng() % 3 == 0) {  // a near twin of an earlier one
      Decision twin = out[rng() % out.size()];
      switch (rng() % 6) {
        case 0:
          twin.cost.keys_read += 1;
          break;
        case 1:
          twin.cost.cache_hits += 1;
          break;
        case 2:
          if (!twin.limits.empty()) twin.limits[0].exact = !twin.limits[0].exact;
          break;
        case 3:
          if (!twin.limits.empty()) twin.limits.back().count_min += 1;
          break;
        case 4:
          if (!twin.limits.empty()) twin.limits[0].remaining += 1;
          break;
        default:
          twin.cost.round_trips += 1;
      }
      out.push_back(twin);
      continue;
    }
    Decision d;
    d.recorded = rng() % 4 == 0;
    d.at = FromUnix(1'700'000'000 + int64_t(rng() % 3));
    d.retry_after = rng() % 9 == 0 ? std::nullopt : std::optional(Seconds{int64_t(rng() % 5)});
    d.cost.blocked_hits = rng() % 2;
    d.cost.keys_read = rng() % 7;
    if (rng() % 5 == 0) d.blocked_until = d.at + Seconds{int64_t(rng() % 100)};
    for (size_t i = 0, m = 1 + rng() % 4; i < m; ++i) {
      const Limit& limit = limits[rng() % limits.size()];
      const uint64_t count = rng() % 12;
      d.limits.push_back(LimitOutcome{
          limit, count, count < limit.max_hits ? limit.max_hits - count : 0, rng() % 2 == 0,
          rng() % 8 == 0 ? std::nullopt : std::optional(Seconds{int64_t(rng() % 60)}),
          rng() % 2 == 0, rng() % 5});
    }
    out.push_back(d);
  }
  return out;
}

TEST(DenialAnswers, KeepsDenialsDecidedOnCountsOnly) {
  Decision d;
  EXPECT_TRUE(DenialAnswers::Keeps(d));
  d.allowed = true;
  EXPECT_FALSE(DenialAnswers::Keeps(d));
  d.allowed = false;
  d.degraded = true;
  d.store_error = Error(ErrorCode::kUnavailable, "memcached down");
  EXPECT_FALSE(DenialAnswers::Keeps(d));
  d.degraded = false;
  d.store_error.reset();
  d.local = true;
  EXPECT_FALSE(DenialAnswers::Keeps(d));
}

// Few slots, so that decisions take each other's slots and near twins meet in one.
TEST(DenialAnswers, AnAnswerFromTheMemoIsWhatRenderingGives) {
  std::mt19937_64 rng(7);
  const std::vector<Decision> pool = Denials(rng, 300);
  DenialAnswers answers(7);
  for (int round = 0; round < 5000; ++round) {
    const Decision& d = pool[rng() % pool.size()];
    ExpectSame(answers.Render(d), Rendered(d));
    ASSERT_FALSE(testing::Test::HasFailure()) << "round " << round;
  }
}

TEST(DenialAnswers, AnEqualDecisionIsAnsweredAgainAlike) {
  std::mt19937_64 rng(11);
  DenialAnswers answers(1);
  const Decision d = Denials(rng, 1).front();
  const DenialAnswers::Answer first = answers.Render(d);
  ExpectSame(answers.Render(d), first);
  Decision later = d;
  later.at += Seconds{1};  // the same client a second later: a new answer
  const DenialAnswers::Answer next = answers.Render(later);
  EXPECT_NE(next.json, first.json);
  ExpectSame(next, Rendered(later));
}

// Threads rendering the same decisions at once (run under TSan too) each get exact answers.
TEST(DenialAnswers, ThreadsRenderingAtOnceEachGetTheirDecisionsAnswer) {
  std::mt19937_64 rng(13);
  const std::vector<Decision> pool = Denials(rng, 64);
  std::vector<DenialAnswers::Answer> want;
  for (const Decision& d : pool) want.push_back(Rendered(d));
  DenialAnswers answers(16);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 mine(100 + t);
      for (int i = 0; i < 4000; ++i) {
        const size_t k = mine() % pool.size();
        const DenialAnswers::Answer got = answers.Render(pool[k]);
        if (got.json != want[k].json || got.fields.policy != want[k].fields.policy ||
            got.fields.current != want[k].fields.current ||
            got.fields.retry_after != want[k].fields.retry_after) {
          ++wrong[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace hourglass
