// EnvoyRequest, one ShouldRateLimit request from descriptors to response, on an in-memory store and
// a manual clock: decisions and counts against a brute-force count on random traces, the time a
// denied descriptor names (never too early), `replaces`, `unlimited`, shadow mode, counting modes,
// the failure mode and the optional RateLimit headers. (The same service over gRPC against a real
// memcached is envoy_rls_test.cc.)
#include "hourglass/envoy_request.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "failing_store.h"
#include "hourglass/local_ledger.h"
#include "hourglass/memory_store.h"
#include "hourglass/service_metrics.h"
#include "prometheus_sample.h"

namespace hourglass {
namespace {

constexpr int64_t kStart = 1'431'820'800;  // 2015-05-17 00:00:00 UTC

constexpr char kConfig[] = R"(domain: shop
descriptors:
  - key: client
    rate_limit:
      name: per_client
      unit: minute
      requests_per_unit: 5
  - key: account
    rate_limit:
      unit: hour
      requests_per_unit: 12
  - key: bucket
    rate_limit:
      unit: minute
      requests_per_unit: 4
      window: fixed
  - key: internal
    rate_limit:
      unlimited: true
  - key: trial
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: path
    value: /checkout
    rate_limit:
      name: checkout
      unit: minute
      requests_per_unit: 2
  - key: plan
    value: gold
    rate_limit:
      replaces:
        - name: checkout
      unit: minute
      requests_per_unit: 50
  - key: login
    block_for: 10m
    rate_limit:
      unit: minute
      requests_per_unit: 2
)";

using Entries = std::vector<std::pair<std::string, std::string>>;
using testing::Sample;
constexpr auto kOk = RateLimitResponse::OK;
constexpr auto kOverLimit = RateLimitResponse::OVER_LIMIT;

RateLimitRequest RequestOf(const std::vector<Entries>& descriptors, uint32_t hits_addend = 0) {
  RateLimitRequest request;
  request.set_domain("shop");
  request.set_hits_addend(hits_addend);
  for (const Entries& entries : descriptors) {
    auto* d = request.add_descriptors();
    for (const auto& [key, value] : entries) {
      auto* e = d->add_entries();
      e->set_key(key);
      e->set_value(value);
    }
  }
  return request;
}

class EnvoyRequestTest : public ::testing::Test {
 protected:
  EnvoyRequestTest()
      : clock_(FromUnix(kStart)),
        memory_(clock_),
        store_(memory_),
        engine_(*Engine::Create(store_, clock_, EngineOptions{})),
        config_(*EnvoyConfig::Parse(kConfig, "shop.yaml")) {}

  // Make, CheckAll and Answer, as the service does for one request.
  Result<RateLimitResponse> Ask(const RateLimitRequest& request) {
    Result<EnvoyRequest> r = EnvoyRequest::Make(config_, request, options_);
    if (!r.ok()) return r.error();
    return r->Answer(engine_.CheckAll(RequestsOf(r->checks())), &metrics_);
  }
  RateLimitResponse Answered(const RateLimitRequest& request) {
    Result<RateLimitResponse> response = Ask(request);
    EXPECT_TRUE(response.ok()) << response.error().ToString();
    return response.ok() ? *response : RateLimitResponse{};
  }
  RateLimitResponse::Code Overall(const RateLimitRequest& request) {
    return Answered(request).overall_code();
  }
  // How many more hits of one descriptor fit now, asked without counting.
  uint32_t Remaining(const Entries& entries) {
    RateLimitRequest peek = RequestOf({entries});
    peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
    return Answered(peek).statuses(0).limit_remaining();
  }

  ManualClock clock_;
  MemoryStore memory_;
  testing::FailingStore store_;
  Engine engine_;
  EnvoyConfig config_;
  EnvoyOptions options_;
  ServiceMetrics metrics_;
};

std::map<std::string, std::string> HeadersOf(const RateLimitResponse& response) {
  std::map<std::string, std::string> headers;
  for (const auto& h : response.response_headers_to_add()) headers[h.key()] = h.value();
  return headers;
}

// A brute-force count of one descriptor's admitted hits: (second, hits) pairs.
struct Counter {
  Window window;
  uint64_t limit;
  std::vector<std::pair<int64_t, uint64_t>> hits;

  uint64_t At(int64_t t) const {
    const Span span = window.SpanAt(FromUnix(t));
    uint64_t n = 0;
    for (const auto& [at, k] : hits) n += span.Contains(at) ? k : 0;
    return n;
  }
  bool Fits(int64_t t, uint64_t k) const { return At(t) + k <= limit; }
};

// Random requests of one or two descriptors (per client 5/min sliding, per account 12/h sliding,
// per bucket 4/min fixed) with 1-3 hits each, the clock moving 0-20 s between them: every code is
// the brute force's, limit_remaining is never above the truth, and a denied descriptor's
// duration_until_reset is never too early.
TEST_F(EnvoyRequestTest, DecisionsAreExactOnRandomTraces) {
  std::map<std::string, Counter> truth = {
      {"client", {*Window::Sliding(Seconds{60}), 5, {}}},
      {"account", {*Window::Sliding(Seconds{3600}), 12, {}}},
      {"bucket", {*Window::Fixed(Seconds{60}), 4, {}}},
  };
  const std::vector<std::string> keys = {"client", "account", "bucket"};
  std::mt19937 rng(20261123);
  int denied = 0, admitted = 0;
  for (int step = 0; step < 3000; ++step) {
    clock_.Advance(Seconds{std::uniform_int_distribution<int>(0, 20)(rng)});
    const int64_t now = ToUnix(clock_.Now());
    const uint32_t hits = std::uniform_int_distribution<uint32_t>(1, 3)(rng);
    const size_t first = rng() % 3;
    std::vector<std::string> asked = {keys[first]};
    if (rng() % 2 == 0) asked.push_back(keys[(first + 1 + rng() % 2) % 3]);
    std::vector<Entries> descriptors;
    for (const std::string& k : asked) descriptors.push_back({{k, "v"}});
    const RateLimitResponse r = Answered(RequestOf(descriptors, hits));
    ASSERT_EQ(r.statuses_size(), static_cast<int>(asked.size()));
    bool all_fit = true;
    for (size_t i = 0; i < asked.size(); ++i) {
      const Counter& c = truth.at(asked[i]);
      const bool fits = c.Fits(now, hits);
      all_fit = all_fit && fits;
      const auto& s = r.statuses(static_cast<int>(i));
      ASSERT_EQ(s.code(), fits ? kOk : kOverLimit)
          << "step " << step << " " << asked[i] << " count " << c.At(now) << " + " << hits;
      if (!fits) {
        const int64_t until = s.duration_until_reset().seconds();
        EXPECT_TRUE(c.Fits(now + until, hits)) << "step " << step << ": too early by some";
      }
    }
    ASSERT_EQ(r.overall_code(), all_fit ? kOk : kOverLimit);
    if (all_fit) {
      for (const std::string& k : asked) truth.at(k).hits.emplace_back(now, hits);
    }
    for (size_t i = 0; i < asked.size(); ++i) {
      const Counter& c = truth.at(asked[i]);
      EXPECT_LE(r.statuses(static_cast<int>(i)).limit_remaining(), c.limit - c.At(now))
          << "step " << step << " " << asked[i];
    }
    (all_fit ? admitted : denied) += 1;
  }
  EXPECT_GT(denied, 300) << "the trace must press the limits";
  EXPECT_GT(admitted, 300);
}

TEST_F(EnvoyRequestTest, ADeniedRequestCountsNowhereInAdmittedModeAndEverywhereInAttempts) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Overall(RequestOf({{{"client", "c"}}})), kOk);
  const RateLimitRequest both = RequestOf({{{"account", "a"}}, {{"client", "c"}}});
  const RateLimitResponse denied = Answered(both);
  EXPECT_EQ(denied.overall_code(), kOverLimit);
  EXPECT_EQ(denied.statuses(0).code(), kOk);
  EXPECT_EQ(denied.statuses(0).limit_remaining(), 12u) << "taken back, and reported so";
  EXPECT_EQ(Remaining({{"account", "a"}}), 12u);

  options_.mode = CountingMode::kAttempts;
  EXPECT_EQ(Overall(both), kOverLimit);
  EXPECT_EQ(Remaining({{"account", "a"}}), 11u) << "attempts count the allowed descriptor";
}

// Take-backs that cannot be sent (the denied descriptor's own, the others' of the request) leave
// their hits counted: the response says so and the metrics count each.
TEST_F(EnvoyRequestTest, FailedTakeBacksStayCountedAndAreCounted) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Overall(RequestOf({{{"client", "c"}}})), kOk);
  EXPECT_EQ(Sample(metrics_.Render(), "hourglass_failed_take_backs_total"), 0);
  store_.FailWritesOnly(true);
  const RateLimitResponse denied = Answered(RequestOf({{{"account", "a"}}, {{"client", "c"}}}));
  store_.FailWritesOnly(false);
  EXPECT_EQ(denied.overall_code(), kOverLimit);
  EXPECT_EQ(denied.statuses(0).limit_remaining(), 11u) << "not taken back, and reported so";
  EXPECT_EQ(Remaining({{"account", "a"}}), 11u);
  EXPECT_EQ(Sample(metrics_.Render(), "hourglass_failed_take_backs_total"), 2);
}

TEST_F(EnvoyRequestTest, ADenialNamesTheSecondTheFirstHitLeaves) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Overall(RequestOf({{{"client", "c"}}})), kOk);
    clock_.Advance(Seconds{7});
  }
  // Hits at +0, +7, ..., +28; now +35. The first leaves a 60 s window at +60.
  const RateLimitResponse denied = Answered(RequestOf({{{"client", "c"}}}));
  ASSERT_EQ(denied.overall_code(), kOverLimit);
  const int64_t until = denied.statuses(0).duration_until_reset().seconds();
  EXPECT_GE(until, 25) << "never too early";
  clock_.Advance(Seconds{until});
  EXPECT_EQ(Overall(RequestOf({{{"client", "c"}}})), kOk);
}

TEST_F(EnvoyRequestTest, AFixedWindowResetsAtItsEnd) {
  clock_.Advance(Seconds{45});
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Overall(RequestOf({{{"bucket", "b"}}})), kOk);
  const RateLimitResponse denied = Answered(RequestOf({{{"bucket", "b"}}}));
  EXPECT_EQ(denied.overall_code(), kOverLimit);
  EXPECT_EQ(denied.statuses(0).duration_until_reset().seconds(), 15);
  clock_.Advance(Seconds{15});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Overall(RequestOf({{{"bucket", "b"}}})), kOk);
}

TEST_F(EnvoyRequestTest, ReplacedUnlimitedAndUnmatchedDescriptorsAreOkWithoutACheck) {
  const RateLimitRequest request = RequestOf(
      {{{"path", "/checkout"}}, {{"plan", "gold"}}, {{"internal", "x"}}, {{"nothing", "here"}}});
  Result<EnvoyRequest> made = EnvoyRequest::Make(config_, request, options_);
  ASSERT_TRUE(made.ok());
  ASSERT_EQ(made->checks().size(), 1u) << "only the replacing limit is checked";
  for (int i = 0; i < 10; ++i) {
    const RateLimitResponse r = Answered(request);
    EXPECT_EQ(r.overall_code(), kOk) << "checkout's 2/min is replaced by gold's 50/min";
    EXPECT_EQ(r.statuses(0).code(), kOk);
    EXPECT_EQ(r.statuses(0).current_limit().requests_per_unit(), 0u);
    EXPECT_EQ(r.statuses(1).limit_remaining(), 49u - i);
    EXPECT_EQ(r.statuses(2).limit_remaining(), std::numeric_limits<uint32_t>::max());
    EXPECT_EQ(r.statuses(3).code(), kOk);
  }
  EXPECT_EQ(Overall(RequestOf({{{"path", "/checkout"}}})), kOk);
  EXPECT_EQ(Overall(RequestOf({{{"path", "/checkout"}}})), kOk);
  EXPECT_EQ(Overall(RequestOf({{{"path", "/checkout"}}})), kOverLimit)
      << "alone, checkout's own limit applies and the replaced requests did not count";
}

TEST_F(EnvoyRequestTest, AShadowDescriptorOverItsLimitAnswersOk) {
  ASSERT_EQ(Overall(RequestOf({{{"trial", "t"}}})), kOk);
  const RateLimitResponse r = Answered(RequestOf({{{"trial", "t"}}, {{"client", "c"}}}));
  EXPECT_EQ(r.overall_code(), kOk);
  EXPECT_EQ(r.statuses(0).code(), kOk);
  EXPECT_EQ(r.statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(Remaining({{"client", "c"}}), 4u) << "the request went through and counts";
}

TEST_F(EnvoyRequestTest, AnUnreachableStoreAnswersPerTheFailureMode) {
  store_.Fail(true);
  const RateLimitRequest request = RequestOf({{{"client", "c"}}});
  const RateLimitResponse open = Answered(request);
  EXPECT_EQ(open.overall_code(), kOk);
  options_.on_store_failure = FailureMode::kFailClosed;
  const RateLimitResponse closed = Answered(request);
  EXPECT_EQ(closed.overall_code(), kOverLimit);
  EXPECT_EQ(closed.statuses(0).current_limit().requests_per_unit(), 5u);
  store_.Fail(false);
  EXPECT_EQ(Remaining({{"client", "c"}}), 5u) << "nothing was counted while it was away";
}

// --envoy-failure-mode local: decided in the service against its share (here the whole limit),
// and written back, so that the store counts those hits once it answers.
TEST_F(EnvoyRequestTest, AnUnreachableStoreIsDecidedLocallyAndWrittenBackAfter) {
  LocalLedger ledger({.services = 1});
  EngineOptions local;
  local.fallback = &ledger;
  engine_ = *Engine::Create(store_, clock_, local);
  options_.on_store_failure = FailureMode::kLocal;
  store_.Fail(true);
  const RateLimitRequest request = RequestOf({{{"client", "c"}}});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Overall(request), kOk) << i;
  const RateLimitResponse over = Answered(request);
  EXPECT_EQ(over.overall_code(), kOverLimit) << "5/m, decided here";
  EXPECT_EQ(over.statuses(0).limit_remaining(), 0u);
  store_.Fail(false);
  EXPECT_EQ(Remaining({{"client", "c"}}), 0u) << "the 5 local hits, written back first";
  EXPECT_EQ(ledger.stats().written_back, 5u);
}

TEST_F(EnvoyRequestTest, ResponseHeadersNameTheMostConstrainingLimit) {
  options_.response_headers = true;
  const RateLimitRequest request = RequestOf({{{"account", "a"}}, {{"client", "c"}}}, 2);
  std::map<std::string, std::string> headers = HeadersOf(Answered(request));
  EXPECT_EQ(headers["RateLimit-Policy"], "\"12/h\";q=12;w=3600, \"5/m\";q=5;w=60");
  EXPECT_EQ(headers["RateLimit"], "\"5/m\";r=3;t=60");
  EXPECT_EQ(headers.count("Retry-After"), 0u);
  Answered(request);
  headers = HeadersOf(Answered(request));
  EXPECT_EQ(headers["RateLimit"].rfind("\"5/m\";r=1;t=", 0), 0u) << headers["RateLimit"];
  EXPECT_EQ(headers["Retry-After"], "60");
  options_.response_headers = false;
  EXPECT_EQ(Answered(request).response_headers_to_add_size(), 0);
}

// A descriptor refused (a value over 64 KiB) refuses the request before anything is counted.
TEST_F(EnvoyRequestTest, ARefusedDescriptorCountsNothingOfTheOthers) {
  const Error refused =
      Ask(RequestOf({{{"client", "c"}}, {{"client", std::string(kMaxFieldBytes + 1, 'x')}}}))
          .error();
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("descriptor 1: "), std::string::npos) << refused.ToString();
  EXPECT_EQ(Remaining({{"client", "c"}}), 5u) << "descriptor 0 was not counted";
}

// Hits above the limit can never fit: OVER_LIMIT with no reset to wait for, not "1 s".
TEST_F(EnvoyRequestTest, ACostThatCanNeverFitHasNoDurationUntilReset) {
  RateLimitRequest costly = RequestOf({{{"client", "c"}}});
  costly.set_hits_addend(6);  // the client limit is 5 a minute
  const RateLimitResponse r = Answered(costly);
  EXPECT_EQ(r.overall_code(), kOverLimit);
  EXPECT_FALSE(r.statuses(0).has_duration_until_reset());
  EXPECT_EQ(Remaining({{"client", "c"}}), 5u);
}

// A MONTH is the calendar month in UTC (the reference counts 30 days from the Unix epoch): a
// client limited on the last day of a month is admitted again at midnight on the 1st.
TEST_F(EnvoyRequestTest, AMonthIsTheCalendarMonthInUtc) {
  EngineOptions options;
  options.retention = Seconds{32 * 86400};
  const Engine monthly = *Engine::Create(store_, clock_, options);
  RateLimitRequest request = RequestOf({{{"client", "m"}}});
  request.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(3);
  request.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::MONTH);
  const auto ask = [&] {
    Result<EnvoyRequest> r = EnvoyRequest::Make(config_, request, options_);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    Result<RateLimitResponse> response =
        r->Answer(monthly.CheckAll(RequestsOf(r->checks())), &metrics_);
    EXPECT_TRUE(response.ok()) << response.error().ToString();
    return *response;
  };
  clock_.Set(FromUnix(1'433'030'400));  // 2015-05-31 00:00:00 UTC
  EXPECT_EQ(ask().overall_code(), RateLimitResponse::OK);
  clock_.Set(FromUnix(1'433'116'740));  // 23:59:00
  EXPECT_EQ(ask().overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(ask().overall_code(), RateLimitResponse::OK);
  const RateLimitResponse denied = ask();
  EXPECT_EQ(denied.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(denied.statuses(0).current_limit().unit(), envoy::type::v3::MONTH);
  clock_.Set(FromUnix(1'433'116'800));  // 2015-06-01 00:00:00 UTC
  const RateLimitResponse june = ask();
  EXPECT_EQ(june.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(june.statuses(0).limit_remaining(), 2u);
}

// hourglass's block_for on a descriptor: the denial blocks its entries for 10 minutes, though
// the minute's hits leave after one, and the status says how long.
TEST_F(EnvoyRequestTest, ADescriptorsPenaltyBlocksItsEntriesAndSaysUntilWhen) {
  const RateLimitRequest login = RequestOf({{{"login", "ann"}}});
  EXPECT_EQ(Overall(login), kOk);
  EXPECT_EQ(Overall(login), kOk);
  const RateLimitResponse denied = Answered(login);
  EXPECT_EQ(denied.overall_code(), kOverLimit);
  EXPECT_EQ(denied.statuses(0).duration_until_reset().seconds(), 600);
  clock_.Advance(Seconds{120});  // the minute's hits have left: the penalty holds
  const RateLimitResponse blocked = Answered(login);
  EXPECT_EQ(blocked.overall_code(), kOverLimit);
  EXPECT_EQ(blocked.statuses(0).duration_until_reset().seconds(), 480);
  EXPECT_EQ(Overall(RequestOf({{{"login", "bob"}}})), kOk) << "another entry is not blocked";
  clock_.Advance(Seconds{480});
  EXPECT_EQ(Overall(login), kOk);
}

TEST_F(EnvoyRequestTest, BadRequestsAreRefusedNamingTheProblem) {
  RateLimitRequest no_domain = RequestOf({{{"client", "c"}}});
  no_domain.set_domain("");
  EXPECT_EQ(Ask(no_domain).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Ask(RequestOf({})).error().code(), ErrorCode::kInvalidArgument);
  options_.max_descriptors = 2;
  const Error many = Ask(RequestOf({{{"a", "1"}}, {{"b", "2"}}, {{"c", "3"}}})).error();
  EXPECT_NE(many.message().find("at most 2"), std::string::npos) << many.ToString();
  RateLimitRequest month = RequestOf({{{"client", "c"}}, {{"client", "d"}}});
  month.mutable_descriptors(1)->mutable_limit()->set_requests_per_unit(3);
  month.mutable_descriptors(1)->mutable_limit()->set_unit(envoy::type::v3::MONTH);
  const Error unit = Ask(month).error();  // a month needs a retention of 31 days
  EXPECT_NE(unit.message().find("descriptor 1"), std::string::npos) << unit.ToString();
  EXPECT_NE(unit.message().find("calendar month"), std::string::npos) << unit.ToString();
  EXPECT_NE(unit.message().find("raise the retention"), std::string::npos) << unit.ToString();
  month.mutable_descriptors(1)->mutable_limit()->set_unit(
      static_cast<envoy::type::v3::RateLimitUnit>(9));
  const Error unknown = Ask(month).error();
  EXPECT_NE(unknown.message().find("descriptor 1: limit override unit 9 is unknown"),
            std::string::npos)
      << unknown.ToString();
  const Error too_long = Ask(RequestOf({{{"client", std::string(kMaxFieldBytes, 'x')}}})).error();
  EXPECT_NE(too_long.message().find("descriptor 0"), std::string::npos) << too_long.ToString();
}

}  // namespace
}  // namespace hourglass
