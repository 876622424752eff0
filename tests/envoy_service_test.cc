// EnvoyService in process: ShouldRateLimit and POST /json through the service's batcher, on a
// memory store and a manual clock, so that windows pass without sleeping. The gRPC face and the
// real servers are envoy_rls_test's; the request-to-response step alone is envoy_request_test's.
#include "hourglass/envoy_service.h"

#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "hourglass/memory_store.h"
#include "prometheus_sample.h"

namespace hourglass {
namespace {

constexpr int64_t kStart = 1'700'000'000;

class EnvoyServiceTest : public ::testing::Test {
 protected:
  EnvoyServiceTest()
      : clock_(FromUnix(kStart)),
        store_(clock_),
        engine_(*Engine::Create(store_, clock_, LongRunning())),
        service_(engine_,
                 std::make_shared<const EnvoyConfig>(
                     *EnvoyConfig::Parse("domain: edge\n"
                                         "descriptors:\n"
                                         "  - key: client\n"
                                         "    rate_limit: {unit: minute, requests_per_unit: 2}\n"
                                         "  - key: account\n"
                                         "    rate_limit: {unit: hour, requests_per_unit: 100}\n",
                                         "edge.yaml")),
                 EnvoyOptions{}, &metrics_) {}
  static EngineOptions LongRunning() {
    EngineOptions o;
    o.hot_path = HotPathOptions::LongRunning(1024);
    return o;
  }
  static RateLimitRequest RequestOf(const std::vector<std::pair<std::string, std::string>>& ds) {
    RateLimitRequest r;
    r.set_domain("edge");
    for (const auto& [key, value] : ds) {
      auto* e = r.add_descriptors()->add_entries();
      e->set_key(key);
      e->set_value(value);
    }
    return r;
  }
  // ShouldRateLimit, waiting for its answer (given on whichever thread the service chooses).
  Result<RateLimitResponse> Ask(const RateLimitRequest& request) {
    std::promise<Result<RateLimitResponse>> answer;
    service_.ShouldRateLimit(request,
                             [&](Result<RateLimitResponse> r) { answer.set_value(std::move(r)); });
    return answer.get_future().get();
  }
  RateLimitResponse::Code Overall(const RateLimitRequest& request) {
    Result<RateLimitResponse> r = Ask(request);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? r->overall_code() : RateLimitResponse::UNKNOWN;
  }

  ManualClock clock_;
  MemoryStore store_;
  Engine engine_;
  ServiceMetrics metrics_;
  EnvoyService service_;
};

TEST_F(EnvoyServiceTest, AClientIsLimitedUntilItsFirstHitLeavesTheMinute) {
  EXPECT_EQ(Overall(RequestOf({{"client", "c"}})), RateLimitResponse::OK);
  clock_.Advance(Seconds{30});
  EXPECT_EQ(Overall(RequestOf({{"client", "c"}})), RateLimitResponse::OK);
  EXPECT_EQ(Overall(RequestOf({{"client", "c"}})), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(Overall(RequestOf({{"client", "c"}})), RateLimitResponse::OVER_LIMIT);
  EXPECT_GE(testing::Sample(metrics_.Render(), "hourglass_local_denials_total"), 1)
      << "the repeat denial was answered from the blocked-client cache";
  clock_.Advance(Seconds{30});
  EXPECT_EQ(Overall(RequestOf({{"client", "c"}})), RateLimitResponse::OK);
}

TEST_F(EnvoyServiceTest, ADeniedRequestCountsNothingOfItsOtherDescriptors) {
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(Overall(RequestOf({{"client", "d"}})), RateLimitResponse::OK);
  EXPECT_EQ(Overall(RequestOf({{"account", "a"}, {"client", "d"}})), RateLimitResponse::OVER_LIMIT);
  RateLimitRequest peek = RequestOf({{"account", "a"}});
  peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  Result<RateLimitResponse> r = Ask(peek);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).limit_remaining(), 100u) << "the account's check was taken back";
}

TEST_F(EnvoyServiceTest, JsonAnswersTheSameAndRefusesBadRequests) {
  const auto post = [&](const std::string& body) {
    HttpRequest request(HttpMethod::kPost, "/json");
    request.body() = body;
    std::promise<HttpResponse> answer;
    service_.HandleJson(
        request, HttpResponder([&](HttpResponder::Builder build) { answer.set_value(build()); }));
    return answer.get_future().get();
  };
  const std::string body =
      R"({"domain":"edge","descriptors":[{"entries":[{"key":"client","value":"j"}]}]})";
  EXPECT_EQ(post(body).status(), HttpStatus::kOk);
  EXPECT_EQ(post(body).status(), HttpStatus::kOk);
  HttpResponse over = post(body);
  EXPECT_EQ(over.status(), HttpStatus::kTooManyRequests);
  EXPECT_EQ(nlohmann::json::parse(over.body())["overallCode"], "OVER_LIMIT");
  EXPECT_EQ(post(R"({"domain":"edge","descriptorz":[]})").status(), HttpStatus::kBadRequest);
  // A key twice: refused as /v1 refuses it, counting nothing (protobuf alone takes the last).
  HttpResponse twice =
      post(R"({"domain":"edge","descriptors":[{"entries":[{"key":"client","value":"m",)"
           R"("value":"n"}]}]})");
  EXPECT_EQ(twice.status(), HttpStatus::kBadRequest);
  EXPECT_EQ(nlohmann::json::parse(twice.body())["error"],
            "field \"value\" is given twice in one object: give each field once");
  const std::string too_long = std::string(R"({"domain":"edge","descriptors":[)") +
                               R"({"entries":[{"key":"client","value":"k"}]},)" +
                               R"({"entries":[{"key":"client","value":")" +
                               std::string(kMaxFieldBytes + 1, 'x') + R"("}]}]})";
  HttpResponse refused = post(too_long);
  EXPECT_EQ(refused.status(), HttpStatus::kBadRequest);
  EXPECT_NE(refused.body().find("descriptor 1"), std::string::npos)
      << refused.body().substr(0, 200);
  EXPECT_EQ(Overall(RequestOf({{"client", "k"}})), RateLimitResponse::OK);
  EXPECT_EQ(Overall(RequestOf({{"client", "k"}})), RateLimitResponse::OK)
      << "the refused request counted nothing for k";
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Overall(RequestOf({{"client", "n"}})), RateLimitResponse::OK)
        << "the refused request counted nothing for n";
  }
}

}  // namespace
}  // namespace hourglass
