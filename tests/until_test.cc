// "Until when" as the CLI tells it: the binding limit (the denial freeing last, a never before
// any time; the least room when allowed), the instant a client is free, a penalty named.
#include "until.h"

#include <gtest/gtest.h>

namespace hourglass::cli {
namespace {

const Instant kAt = FromUnix(1'431'857'103);  // 2015-05-17T10:05:03Z

LimitOutcome Outcome(uint64_t max, int64_t window, uint64_t count, std::optional<Seconds> retry) {
  return LimitOutcome{.limit = Limit{*Window::Sliding(Seconds{window}), max},
                      .count = count,
                      .remaining = count >= max ? 0 : max - count,
                      .exceeded = retry != Seconds{0},
                      .retry_after = retry,
                      .exact = true,
                      .count_min = count};
}

TEST(Until, TheDenialThatFreesLastBinds) {
  Decision d;
  d.at = kAt;
  d.limits = {Outcome(2, 60, 2, Seconds{50}), Outcome(5, 3600, 5, Seconds{1200}),
              Outcome(100, 86400, 7, Seconds{0})};
  d.retry_after = Seconds{1200};
  EXPECT_EQ(BindingLimit(d), 1u);
  EXPECT_EQ(FreeAt(d), kAt + Seconds{1200});
  EXPECT_EQ(UntilText(d),
            "a hit now: denied until 2015-05-17T10:25:03Z (in 20m): 5/h binds\n"
            "  2/m          2 of 2         free at 2015-05-17T10:05:53Z\n"
            "  5/h          5 of 5         free at 2015-05-17T10:25:03Z  binds\n"
            "  100/d        7 of 100\n");
}

TEST(Until, ACostThatNeverFitsBindsBeforeAnyTime) {
  Decision d;
  d.at = kAt;
  d.limits = {Outcome(2, 60, 0, Seconds{50}), Outcome(3, 3600, 0, std::nullopt)};
  d.retry_after = std::nullopt;
  EXPECT_EQ(BindingLimit(d), 1u);
  EXPECT_FALSE(FreeAt(d).has_value());
  EXPECT_EQ(UntilText(d).substr(0, UntilText(d).find('\n')),
            "a hit now: denied, never (its cost exceeds a limit): 3/h binds");
}

TEST(Until, AllowedTellsTheLimitWithTheLeastRoom) {
  Decision d;
  d.at = kAt;
  d.allowed = true;
  d.limits = {Outcome(10, 60, 1, Seconds{0}), Outcome(5, 3600, 4, Seconds{0})};
  EXPECT_EQ(BindingLimit(d), 1u);
  EXPECT_EQ(FreeAt(d), kAt);
  EXPECT_EQ(UntilText(d).substr(0, UntilText(d).find('\n')),
            "a hit now: allowed, 1 more fit under 5/h");
  const nlohmann::json j = UntilJson(d);
  EXPECT_EQ(j["binding"], "5/h");
  EXPECT_EQ(j["free_at"], ToUnix(kAt));
}

TEST(Until, APenaltyIsNamedAsWhatHoldsTheClient) {
  Decision d;
  d.at = kAt;
  d.limits = {Outcome(2, 60, 1, Seconds{0})};
  d.blocked_until = kAt + Seconds{900};
  d.retry_after = Seconds{900};
  EXPECT_EQ(FreeAt(d), kAt + Seconds{900});
  EXPECT_EQ(UntilText(d).substr(0, UntilText(d).find('\n')),
            "a hit now: denied until 2015-05-17T10:20:03Z (in 15m) by a penalty (block_for)");
}

TEST(Until, AFailedStoreTellsNoTime) {
  Decision d;
  d.at = kAt;
  d.degraded = true;
  d.store_error = Error(ErrorCode::kUnavailable, "memcached 127.0.0.1:1: refused");
  EXPECT_FALSE(FreeAt(d).has_value());
  EXPECT_FALSE(BindingLimit(d).has_value());
  EXPECT_NE(UntilText(d).find("unknown, the store failed"), std::string::npos);
  EXPECT_TRUE(UntilJson(d)["free_at"].is_null());
}

}  // namespace
}  // namespace hourglass::cli
