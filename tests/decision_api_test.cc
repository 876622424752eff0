// The HTTP API in process: DecisionApi on a memory store and a manual clock, so that windows pass
// without sleeping. Routing, decisions over time with their RateLimit fields, all-or-nothing
// lists, strict bodies, resets reaching this process's cached denials, and the route table.
#include "hourglass/decision_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hourglass/api_route.h"
#include "hourglass/key_space.h"
#include "hourglass/memory_store.h"

namespace hourglass {
namespace {

// The value of `response`'s field `name`, or "" when it has none.
std::string FieldOf(const HttpResponse& response, std::string_view name) {
  const std::string* value = response.Find(name);
  return value != nullptr ? *value : "";
}

using nlohmann::json;

constexpr int64_t kStart = 1'700'000'000;

TEST(RouteOf, ClassifiesEveryEndpointInOnePlace) {
  EXPECT_EQ(RouteOf("/v1/check").endpoint, Endpoint::kCheck);
  EXPECT_EQ(RouteOf("/v1/check").method, HttpMethod::kPost);
  EXPECT_EQ(RouteOf("/v1/counters").method, HttpMethod::kDelete);
  const ApiRoute auth = RouteOf("/v1/auth/url_shorten");
  EXPECT_EQ(auth.endpoint, Endpoint::kAuth);
  EXPECT_EQ(auth.auth_event, "url_shorten");
  EXPECT_EQ(auth.label, "/v1/auth");
  EXPECT_EQ(RouteOf("/v1/auth/").endpoint, Endpoint::kUnknown);
  EXPECT_EQ(RouteOf("/json").endpoint, Endpoint::kEnvoyJson);
  EXPECT_EQ(RouteOf("/v1/check/").endpoint, Endpoint::kUnknown);
  EXPECT_EQ(RouteOf("/v1/nothing").label, "other");
  EXPECT_TRUE(IsCheck(RouteOf("/v1/check"), HttpMethod::kPost));
  EXPECT_FALSE(IsCheck(RouteOf("/v1/check"), HttpMethod::kGet));
  EXPECT_FALSE(IsCheck(RouteOf("/v1/count"), HttpMethod::kGet));
}

class DecisionApiTest : public ::testing::Test {
 protected:
  DecisionApiTest()
      : clock_(FromUnix(kStart)),
        store_(clock_),
        engine_(*Engine::Create(store_, clock_, LongRunning())) {
    std::ofstream(path_) << "events:\n"
                            "  signup:\n    limits: [2/m]\n"
                            "  quota:\n    limits: [5/m, 20/d]\n"
                            "  login:\n    limits: [2/s]\n"
                            "  url_shorten:\n    limits: [100/m]\n"
                            "    overrides:\n      \"203.0.113.66\": {deny: true}\n";
    DecisionApiOptions options;
    options.metrics = &metrics_;
    options.clock = &clock_;
    api_ = std::make_unique<DecisionApi>(
        engine_, std::make_shared<const PolicySource>(*PolicySource::FromFile(path_)), options);
  }
  ~DecisionApiTest() override { unlink(path_.c_str()); }
  // As `hourglass serve --exact-retry-after` builds its engine.
  static EngineOptions LongRunning() {
    EngineOptions o;
    o.hot_path = HotPathOptions::LongRunning(1024);
    o.exact_retry_after = true;
    return o;
  }
  HttpResponse Send(HttpMethod method, const std::string& target, const std::string& body = "") {
    return api_->Handle(HttpRequest(method, target, body));
  }
  HttpResponse Check(const std::string& event, const std::string& feature) {
    return Send(HttpMethod::kPost, "/v1/check",
                json{{"event", event}, {"feature", feature}}.dump());
  }
  uint64_t CountOf(const std::string& event, const std::string& feature) {
    HttpResponse r =
        Send(HttpMethod::kGet, "/v1/count?event=" + event + "&feature=" + feature + "&window=1m");
    EXPECT_EQ(r.status(), HttpStatus::kOk) << r.body();
    return json::parse(r.body())["windows"][0]["count"].get<uint64_t>();
  }

  ManualClock clock_;
  MemoryStore store_;
  Engine engine_;
  ServiceMetrics metrics_;
  std::string path_ = ::testing::TempDir() + "/decision_api_test_" + std::to_string(getpid());
  std::unique_ptr<DecisionApi> api_;
};

TEST_F(DecisionApiTest, DeniesAtTheLimitAndAdmitsAgainOnceTheFirstHitLeavesTheWindow) {
  EXPECT_EQ(Check("signup", "ann").status(), HttpStatus::kOk);
  clock_.Advance(Seconds{20});
  EXPECT_EQ(Check("signup", "ann").status(), HttpStatus::kOk);
  HttpResponse denied = Check("signup", "ann");
  ASSERT_EQ(denied.status(), HttpStatus::kTooManyRequests);
  EXPECT_EQ(FieldOf(denied, "Retry-After"), "40") << "the first hit leaves at +60";
  EXPECT_EQ(FieldOf(denied, "RateLimit"), "\"2/m\";r=0;t=40");
  clock_.Advance(Seconds{39});
  EXPECT_EQ(Check("signup", "ann").status(), HttpStatus::kTooManyRequests);
  clock_.Advance(Seconds{1});
  EXPECT_EQ(Check("signup", "ann").status(), HttpStatus::kOk);
}

// The store lost an hour of today (as memcached evicts): the answer says so, the day still
// counts the lost hits, and the metrics count the check.
TEST_F(DecisionApiTest, HitsTheStoreLostAreToldAndStillCounted) {
  const int64_t today = kStart - kStart % 86400;
  ASSERT_TRUE(engine_.Record("quota", "ann", 20, FromUnix(today + 3600)).ok());
  const std::string group = engine_.keys().GroupKey("quota", "ann");
  std::vector<std::string> lost;
  for (size_t level = 0; level < 3; ++level) {
    lost.push_back(
        engine_.keys().BucketKey(group, engine_.keys().ladder().BucketAt(level, today + 3600)));
  }
  ASSERT_TRUE(store_.Delete(group, lost).ok());
  HttpResponse r = Check("quota", "ann");
  ASSERT_EQ(r.status(), HttpStatus::kTooManyRequests) << r.body();
  const json body = json::parse(r.body());
  EXPECT_TRUE(body["degraded"].get<bool>());
  EXPECT_NE(body["error"].get<std::string>().find("data loss: 20 of today's hits"),
            std::string::npos)
      << body["error"];
  EXPECT_EQ(body["limits"][1]["count"], 20) << "the day counts the lost hits";
  EXPECT_NE(metrics_.Render().find("hourglass_data_loss_checks_total 1"), std::string::npos);
  EXPECT_EQ(metrics_.Render().find("hourglass_store_errors_total{"), std::string::npos)
      << "the store did not fail";
  // A count tells it as well: the day holds the lost hits (and the denied check's was taken back).
  HttpResponse count =
      Send(HttpMethod::kGet, "/v1/count?event=quota&feature=ann&window=1d&window=1m");
  ASSERT_EQ(count.status(), HttpStatus::kOk) << count.body();
  const json counted = json::parse(count.body());
  EXPECT_EQ(counted["missing"], 20) << counted;
  EXPECT_EQ(counted["windows"][0]["count"], 20) << counted;
  EXPECT_EQ(counted["windows"][1]["count"], 0) << "a minute cannot place them";
}

TEST_F(DecisionApiTest, ABannedFeatureIsToldNoRetryTime) {
  HttpResponse r = Check("url_shorten", "203.0.113.66");
  ASSERT_EQ(r.status(), HttpStatus::kTooManyRequests);
  EXPECT_EQ(FieldOf(r, "RateLimit"), "\"0/s\";r=0");
  EXPECT_EQ(r.Find("Retry-After"), nullptr);
}

TEST_F(DecisionApiTest, AListStandsOrFallsTogether) {
  const std::string list = json{{"checks",
                                 {{{"event", "url_shorten"}, {"feature", "198.51.100.1"}},
                                  {{"event", "signup"}, {"feature", "bob"}}}}}
                               .dump();
  EXPECT_EQ(Send(HttpMethod::kPost, "/v1/check", list).status(), HttpStatus::kOk);
  EXPECT_EQ(Send(HttpMethod::kPost, "/v1/check", list).status(), HttpStatus::kOk);
  HttpResponse denied = Send(HttpMethod::kPost, "/v1/check", list);
  ASSERT_EQ(denied.status(), HttpStatus::kTooManyRequests);
  const json body = json::parse(denied.body());
  EXPECT_TRUE(body["checks"][0]["allowed"].get<bool>()) << "the address itself had room";
  EXPECT_FALSE(body["checks"][0]["recorded"].get<bool>());
  EXPECT_EQ(CountOf("url_shorten", "198.51.100.1"), 2u);
  EXPECT_EQ(CountOf("signup", "bob"), 2u);
}

// A list denied by a second's limit and a minute's waits for the minute: its Retry-After is when
// every denied check fits, never earlier, and its RateLimit names the limit that binds.
TEST_F(DecisionApiTest, ADeniedListIsToldToComeBackWhenEveryDenialFits) {
  const std::string list = json{{"checks",
                                 {{{"event", "login"}, {"feature", "198.51.100.7"}},
                                  {{"event", "signup"}, {"feature", "dee"}}}}}
                               .dump();
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(Send(HttpMethod::kPost, "/v1/check", list).status(), HttpStatus::kOk);
  }
  HttpResponse denied = Send(HttpMethod::kPost, "/v1/check", list);
  ASSERT_EQ(denied.status(), HttpStatus::kTooManyRequests) << denied.body();
  const json body = json::parse(denied.body());
  ASSERT_EQ(body["checks"][0]["retry_after"], 1) << body;
  ASSERT_EQ(body["checks"][1]["retry_after"], 60) << body;
  EXPECT_EQ(FieldOf(denied, "Retry-After"), "60");
  EXPECT_EQ(FieldOf(denied, "RateLimit"), "\"2/m\";r=0;t=60");
  clock_.Advance(Seconds{59});
  EXPECT_EQ(Send(HttpMethod::kPost, "/v1/check", list).status(), HttpStatus::kTooManyRequests);
  clock_.Advance(Seconds{1});
  EXPECT_EQ(Send(HttpMethod::kPost, "/v1/check", list).status(), HttpStatus::kOk)
      << "it fits when Retry-After said";
}

TEST_F(DecisionApiTest, AResetReachesThisProcesssCachedDenialAtOnce) {
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Check("signup", "cy").status(), HttpStatus::kOk);
  ASSERT_EQ(Check("signup", "cy").status(), HttpStatus::kTooManyRequests);
  ASSERT_EQ(Send(HttpMethod::kDelete, "/v1/counters?event=signup&feature=cy").status(),
            HttpStatus::kOk);
  EXPECT_EQ(Check("signup", "cy").status(), HttpStatus::kOk) << "no cached denial survives";
}

// X-Forwarded-For in several lines is one list, even with other headers between them: the line a
// proxy appended at the end is read, and the client's own line before it does not decide.
// (Beast keeps lines of one name together; the service does not rely on it.)
TEST_F(DecisionApiTest, ForwardedForLinesAnywhereInTheRequestAreOneList) {
  DecisionApiOptions options;
  options.feature_header = "X-Forwarded-For";
  options.trusted_proxies.hops = 1;
  DecisionApi api(engine_, std::make_shared<const PolicySource>(*PolicySource::FromFile(path_)),
                  options);
  HttpRequest request(HttpMethod::kGet, "/v1/auth/url_shorten");
  request.Add("X-Forwarded-For", "6.6.6.6");
  request.Add("Accept", "*/*");
  request.Add("x-forwarded-for", "203.0.113.7");
  EXPECT_EQ(api.Handle(request, "10.0.0.2").status(), HttpStatus::kNoContent);
  EXPECT_EQ(CountOf("url_shorten", "203.0.113.7"), 1u);
  EXPECT_EQ(CountOf("url_shorten", "6.6.6.6"), 0u);
}

TEST_F(DecisionApiTest, StrictBodiesAndRoutes) {
  HttpResponse r =
      Send(HttpMethod::kPost, "/v1/check", R"({"event":"signup","feature":"d","n":1})");
  EXPECT_EQ(r.status(), HttpStatus::kBadRequest);
  EXPECT_NE(r.body().find("unknown field \\\"n\\\""), std::string::npos) << r.body();
  r = Send(HttpMethod::kGet, "/v1/check");
  EXPECT_EQ(r.status(), HttpStatus::kMethodNotAllowed);
  EXPECT_EQ(FieldOf(r, "Allow"), "POST");
  EXPECT_EQ(Send(HttpMethod::kGet, "/v1/nothing").status(), HttpStatus::kNotFound);
  EXPECT_EQ(Send(HttpMethod::kPost, "/json", "{}").status(), HttpStatus::kNotFound)
      << "Envoy's endpoint is not the API's";
  EXPECT_EQ(Send(HttpMethod::kGet, "/v1/inspect?event=nosuch&feature=d").status(),
            HttpStatus::kNotFound);
  EXPECT_EQ(CountOf("signup", "d"), 0u);
  EXPECT_NE(metrics_.Render().find("endpoint=\"/v1/check\""), std::string::npos);
}

}  // namespace
}  // namespace hourglass
