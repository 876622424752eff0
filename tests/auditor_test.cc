// The auditor: an exact limiter's decisions show no error; a fixed-window limiter's errors are
// found exactly as a sequential brute-force judge finds them; decisions of one second whose order
// matters are order-dependent, not errors; wrong counts are measured.
#include "hourglass/auditor.h"

#include <gtest/gtest.h>

#include <random>

#include "hourglass/memory_store.h"
#include "sliding_log.h"

namespace hourglass {
namespace {

using testing::SlidingLog;

constexpr int64_t kStart = 1'795'737'600;  // 2026-11-27 00:00:00 UTC

AuditRecord Single(int64_t at, const Limit& limit, bool allowed, uint64_t count) {
  AuditRecord r;
  r.at = at;
  r.event = "api";
  r.feature = "k";
  r.allowed = allowed;
  r.request_allowed = allowed;
  r.recorded = allowed;
  r.limits = {AuditLimit{limit, true, count, count, true}};
  return r;
}

// Every decision of the real engine, on a bursty trace of single and double hits in both
// counting modes (an event each), with the hot path's local denials among them.
TEST(Auditor, AnExactLimitersDecisionsHaveNoError) {
  ManualClock clock(FromUnix(kStart));
  MemoryStore store(clock);
  EngineOptions options;
  options.hot_path = HotPathOptions::LongRunning(1024);
  const Engine engine = *Engine::Create(store, clock, options);
  const Policy admitted{*ParseLimits("2/s, 5/m, 10/h, 100/d"), CountingMode::kAdmitted};
  const Policy attempts{*ParseLimits("3/m, 20/h"), CountingMode::kAttempts};
  std::mt19937_64 rng(7);
  Auditor auditor;
  int64_t t = kStart;
  uint64_t decisions = 0;
  for (int i = 0; i < 4000; ++i) {
    t += rng() % 3 == 0 ? static_cast<int64_t>(rng() % 400) : 0;
    clock.Set(FromUnix(t));
    const bool login = i % 3 == 0;
    const Policy& policy = login ? attempts : admitted;
    const std::string feature = "client-" + std::to_string(rng() % 3);
    Engine::CheckRequest check(login ? "login" : "api", feature, policy, rng() % 5 == 0 ? 2 : 1);
    Result<Decision> d = engine.Check(check.event, check.feature, policy, check.hits);
    ASSERT_TRUE(d.ok());
    auditor.Add(AuditRecordOf(check, *d, d->allowed));
    ++decisions;
  }
  const AuditReport report = auditor.Report();
  EXPECT_EQ(report.total.decisions, decisions);
  EXPECT_GT(report.total.denied, 500u);
  EXPECT_EQ(report.total.over_admissions, 0u);
  EXPECT_EQ(report.total.needless_denials, 0u);
  EXPECT_EQ(report.total.count_errors, 0u);
  EXPECT_EQ(report.features, 6u);
  EXPECT_EQ(report.events.size(), 2u);
}

// A clock-aligned fixed window of a minute claiming to enforce 5 in any sliding minute, on
// single hits and bursts within a second: the auditor finds what judging each decision in
// arrival order against the admitted hits before it finds.
TEST(Auditor, AFixedWindowLimitersErrorsAreFoundAsASequentialJudgeFindsThem) {
  const Limit limit{*Window::Sliding(Seconds{60}), 5};
  std::mt19937_64 rng(11);
  Auditor auditor;
  SlidingLog admitted;
  uint64_t over = 0, needless = 0, count_errors = 0;
  int64_t window_start = 0;
  uint64_t in_window = 0;
  int64_t t = kStart;
  for (int i = 0; i < 3000; ++i) {
    t += static_cast<int64_t>(rng() % 20);
    const int burst = rng() % 4 == 0 ? 1 + static_cast<int>(rng() % 4) : 1;
    for (int b = 0; b < burst; ++b) {
      if (t / 60 * 60 != window_start) {
        window_start = t / 60 * 60;
        in_window = 0;
      }
      const bool allowed = in_window + 1 <= 5;
      in_window += allowed ? 1 : 0;
      const uint64_t truth = admitted.Window(t, 60);
      const bool fits = truth + 1 <= 5;
      over += allowed && !fits ? 1 : 0;
      needless += !allowed && fits ? 1 : 0;
      // The fixed window reports its own count as the window's.
      const uint64_t reported = in_window;
      if (allowed) admitted.Add(t);
      count_errors += reported != admitted.Window(t, 60) ? 1 : 0;
      auditor.Add(Single(t, limit, allowed, reported));
    }
  }
  const AuditReport report = auditor.Report();
  EXPECT_GT(over, 50u);
  EXPECT_EQ(report.total.over_admissions, over);
  EXPECT_EQ(report.total.needless_denials, needless);
  EXPECT_GT(count_errors, 0u);
  EXPECT_GE(report.total.count_errors, 1u);
  EXPECT_LE(report.total.count_errors, count_errors);
  EXPECT_EQ(report.total.order_dependent, 0u);
  EXPECT_EQ(report.events.at("api").decisions, report.total.decisions);
}

// Two checks of one feature in one second under different policies, each fitting only if it came
// first: which one overran depends on an order the logs do not know.
TEST(Auditor, DecisionsWhoseOrderMattersAreOrderDependentNotErrors) {
  Auditor auditor;
  auditor.Add(Single(kStart, Limit{*Window::Sliding(Seconds{60}), 1}, true, 1));
  auditor.Add(Single(kStart, Limit{*Window::Sliding(Seconds{3600}), 1}, true, 1));
  const AuditReport report = auditor.Report();
  EXPECT_EQ(report.total.order_dependent, 2u);
  EXPECT_EQ(report.total.errors(), 0u);
  // The same two a second apart: the second overran, whatever it claimed.
  Auditor apart;
  apart.Add(Single(kStart, Limit{*Window::Sliding(Seconds{60}), 1}, true, 1));
  apart.Add(Single(kStart + 1, Limit{*Window::Sliding(Seconds{3600}), 1}, true, 1));
  EXPECT_EQ(apart.Report().total.over_admissions, 1u);
  EXPECT_EQ(apart.Report().total.count_errors, 1u) << "it reported 1 where 2 were counted";
}

// Two services: a check that began in the last moment of a second reached the store after
// another's of the next second, so it counted that hit and the other missed its own. Told when
// the first was answered (done), the auditor finds no order broken; stamped alone, the same
// decisions look like count errors and an over-admission.
TEST(Auditor, DecisionsInFlightTogetherAreUnorderedAcrossSeconds) {
  const Limit minute{*Window::Sliding(Seconds{60}), 1};
  const auto judge = [&](int64_t first_done) {
    Auditor auditor;
    AuditRecord late = Single(kStart, minute, true, 2);  // counted the next second's hit too
    late.done = first_done;
    auditor.Add(late);
    auditor.Add(Single(kStart + 1, minute, true, 1));  // admitted before the late one arrived
    return auditor.Report().total;
  };
  const AuditRow in_flight = judge(kStart + 1);
  EXPECT_EQ(in_flight.errors(), 0u);
  EXPECT_EQ(in_flight.order_dependent, 2u) << "both fit only if they came first";
  const AuditRow stamped = judge(kStart);
  EXPECT_EQ(stamped.count_errors, 2u);
  EXPECT_EQ(stamped.over_admissions, 1u);
  // In flight until its own second's end only: the next second's decision still comes after it.
  Auditor answered;
  AuditRecord first = Single(kStart, minute, true, 1);
  first.done = kStart;
  answered.Add(first);
  answered.Add(Single(kStart + 1, minute, true, 2));
  EXPECT_EQ(answered.Report().total.over_admissions, 1u);
  EXPECT_EQ(answered.Report().total.count_errors, 0u);
}

TEST(Auditor, WrongCountsAreMeasuredAndDegradedDecisionsAreNotJudged) {
  const Limit limit{*Window::Sliding(Seconds{60}), 10};
  Auditor auditor;
  for (int i = 0; i < 3; ++i) auditor.Add(Single(kStart + i, limit, true, i + 1));
  auditor.Add(Single(kStart + 3, limit, true, 8));  // 4 counted: 4 too many
  AuditRecord down = Single(kStart + 4, limit, false, 0);
  down.degraded = true;
  down.limits[0].counted = false;
  auditor.Add(down);
  AuditRecord other = Single(kStart + 5, limit, true, 1);
  other.event = "login";
  auditor.Add(other);
  const AuditReport report = auditor.Report();
  EXPECT_EQ(report.events.at("api").count_errors, 1u);
  EXPECT_EQ(report.events.at("api").count_error_max, 4u);
  EXPECT_EQ(report.events.at("api").degraded, 1u);
  EXPECT_EQ(report.events.at("api").needless_denials, 0u);
  EXPECT_EQ(report.events.at("login").decisions, 1u);
  EXPECT_EQ(report.total.decisions, 6u);
  EXPECT_EQ(report.features, 2u);
}

}  // namespace
}  // namespace hourglass
