// The RateLimit fields of one decision: one policy item per limit; RateLimit names the most
// constraining limit with a `t` never earlier than the truth; Retry-After only on a denial that
// can ever fit.
#include "hourglass/ratelimit_headers.h"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

LimitOutcome Outcome(const std::string& spec, uint64_t count, std::optional<int64_t> retry) {
  LimitOutcome o{*ParseLimit(spec)};
  o.count = count;
  o.remaining = count < o.limit.max_hits ? o.limit.max_hits - count : 0;
  o.exceeded = count > o.limit.max_hits;
  o.retry_after = retry ? std::optional(Seconds{*retry}) : std::nullopt;
  return o;
}

TEST(RateLimitFields, AllowedNamesTheLimitWithTheLeastRemaining) {
  Decision d;
  d.allowed = true;
  d.limits = {Outcome("2/s", 1, 0), Outcome("5/m", 4, 0), Outcome("100/d", 4, 0)};
  const RateLimitFields f = RateLimitFieldsFor(d);
  EXPECT_EQ(f.policy, "\"2/s\";q=2;w=1, \"5/m\";q=5;w=60, \"100/d\";q=100;w=86400");
  EXPECT_EQ(f.current, "\"2/s\";r=1;t=1");
  EXPECT_FALSE(f.retry_after.has_value());
}

TEST(RateLimitFields, DenialNamesTheExceededLimitThatFreesUpLast) {
  Decision d;
  d.allowed = false;
  d.limits = {Outcome("2/s", 3, 1), Outcome("5/m", 6, 42), Outcome("100/d", 6, 0)};
  d.retry_after = Seconds{42};
  const RateLimitFields f = RateLimitFieldsFor(d);
  EXPECT_EQ(f.current, "\"5/m\";r=0;t=42");
  EXPECT_EQ(f.retry_after, "42");
}

TEST(RateLimitFields, ACostThatNeverFitsHasNoRetryAfter) {
  Decision d;
  d.allowed = false;
  d.limits = {Outcome("2/s", 3, std::nullopt)};
  d.retry_after = std::nullopt;
  const RateLimitFields f = RateLimitFieldsFor(d);
  EXPECT_EQ(f.current, "\"2/s\";r=0") << "no wait helps: no t at all";
  EXPECT_FALSE(f.retry_after.has_value());
}

TEST(RateLimitFields, ABannedFeatureIsNotToldToComeBackInASecond) {
  Decision d;
  d.allowed = false;
  d.limits = {Outcome("0/s", 1, std::nullopt)};  // a policy file's `deny: true`
  d.retry_after = std::nullopt;
  const RateLimitFields f = RateLimitFieldsFor(d);
  EXPECT_EQ(f.policy, "\"0/s\";q=0;w=1");
  EXPECT_EQ(f.current, "\"0/s\";r=0");
  EXPECT_FALSE(f.retry_after.has_value());
}

TEST(RateLimitFields, ADegradedDecisionHasOnlyRetryAfter) {
  Decision d;
  d.allowed = false;
  d.degraded = true;
  d.retry_after = Seconds{1};
  const RateLimitFields f = RateLimitFieldsFor(d);
  EXPECT_TRUE(f.policy.empty());
  EXPECT_TRUE(f.current.empty());
  EXPECT_EQ(f.retry_after, "1");
}

Decision Denied(std::optional<int64_t> retry) {
  Decision d;
  d.allowed = false;
  d.retry_after = retry ? std::optional(Seconds{*retry}) : std::nullopt;
  return d;
}

TEST(BindingDecision, AListIsToldTheDenialThatFreesUpLast) {
  Decision allowed;
  allowed.allowed = true;
  EXPECT_EQ(BindingDecision(std::vector<Decision>{}), 0u);
  EXPECT_EQ(BindingDecision(std::vector<Decision>{allowed, allowed}), 0u);
  EXPECT_EQ(BindingDecision(std::vector<Decision>{allowed, Denied(1), Denied(60), Denied(5)}), 2u);
  EXPECT_EQ(BindingDecision(std::vector<Decision>{Denied(60), Denied(60)}), 0u) << "the first tie";
  EXPECT_EQ(BindingDecision(std::vector<Decision>{Denied(60), Denied(std::nullopt), Denied(90)}),
            1u)
      << "one that never fits binds the list: no wait helps";
}

}  // namespace
}  // namespace hourglass
