// The JSON shapes scripts and services depend on.
#include "hourglass/json.h"

#include <gtest/gtest.h>

#include <random>

namespace hourglass {
namespace {

TEST(Json, DumpNeverThrowsOnInvalidUtf8) {
  const nlohmann::json j = {{"feature", std::string("caf\xe9\xff")}};
  EXPECT_NO_THROW(Dump(j));
  EXPECT_NE(Dump(j).find("caf"), std::string::npos);
}

TEST(Json, DecisionJsonHasTheContractFields) {
  Decision d;
  d.allowed = false;
  d.recorded = false;
  d.limits.push_back(LimitOutcome{*ParseLimit("5/m"), 5, 0, true, Seconds{12}});
  d.limits.push_back(LimitOutcome{*ParseLimit("0/s"), 0, 0, true, std::nullopt});
  d.retry_after = std::nullopt;
  const nlohmann::json j = DecisionJson(d);
  EXPECT_EQ(j["allowed"], false);
  EXPECT_EQ(j["degraded"], false);
  ASSERT_EQ(j["limits"].size(), 2u);
  EXPECT_EQ(j["limits"][0]["window"], 60);
  EXPECT_EQ(j["limits"][0]["limit"], 5);
  EXPECT_EQ(j["limits"][0]["count"], 5);
  EXPECT_EQ(j["limits"][0]["remaining"], 0);
  EXPECT_EQ(j["limits"][0]["retry_after"], 12);
  EXPECT_TRUE(j["limits"][1]["retry_after"].is_null());
  EXPECT_TRUE(j["retry_after"].is_null());
}

// The service's direct writer against the tree: byte for byte, on random decisions.
TEST(Json, AppendDecisionJsonWritesExactlyWhatDumpOfDecisionJsonDoes) {
  std::mt19937_64 rng(42);
  const std::vector<Limit> limits = {
      *ParseLimit("5/m"),
      *ParseLimit("0/s"),
      *ParseLimit("3/10s"),
      *ParseLimit("1000000000/h"),
      Limit{*Window::Fixed(Seconds{60}), 2},
      Limit{*Window::Calendar(CalendarUnit::kDay, Seconds{-5 * 3600}), 20},
  };
  const std::vector<std::string> errors = {"memcached 127.0.0.1:1: connection refused",
                                           std::string("bad \"\\ \n\x01 caf\xe9\xff", 16),
                                           "naïve ✓"};
  for (int round = 0; round < 2000; ++round) {
    Decision d;
    d.allowed = rng() % 2 == 0;
    d.recorded = rng() % 2 == 0;
    d.degraded = rng() % 5 == 0;
    if (d.degraded) d.store_error = Error(ErrorCode::kUnavailable, errors[rng() % errors.size()]);
    d.local = d.degraded && rng() % 2 == 0;
    d.retry_after = rng() % 7 == 0 ? std::nullopt : std::optional(Seconds{int64_t(rng() % 90000)});
    d.cost = Cost{rng() % 40, rng() % 4, rng() % 3};
    d.cost.cache_hits = rng() % 30;
    d.cost.blocked_hits = rng() % 2;
    if (rng() % 3 == 0) d.blocked_until = FromUnix(1'700'000'000 + int64_t(rng() % 100000));
    for (size_t n = rng() % 5, i = 0; i < n; ++i) {
      const Limit& limit = limits[rng() % limits.size()];
      const uint64_t count = rng() % 2 == 0 ? rng() : rng() % 100;
      d.limits.push_back(
          LimitOutcome{limit, count, rng() % 100, rng() % 2 == 0,
                       rng() % 6 == 0 ? std::nullopt : std::optional(Seconds{int64_t(rng() % 999)}),
                       rng() % 2 == 0, rng() % 100});
    }
    const bool shadow = rng() % 4 == 0;
    nlohmann::json tree = DecisionJson(d);
    if (shadow) tree["shadow_denied"] = true;
    std::string direct = "prefix:";
    AppendDecisionJson(d, shadow, direct);
    ASSERT_EQ(direct, "prefix:" + Dump(tree)) << "round " << round;
  }
}

}  // namespace
}  // namespace hourglass
