// The decision service as `hourglass serve` assembles it (hourglass::Service), in this process on
// a clock the test moves, in front of a real memcached, driven by a real HTTP client: status
// codes, JSON shapes, the RateLimit fields parsed back per draft-ietf-httpapi-ratelimit-headers-10,
// bad and hostile input, admin views, metrics, a store killed and restarted, penalties, and no
// over-admission across two services sharing one memcached.
#include "hourglass/service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "api_requests.h"
#include "hourglass/engine.h"
#include "hourglass/memory_store.h"
#include "memcached_server.h"
#include "prometheus_sample.h"
#include "service_under_test.h"
#include "temp_path.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::CheckBody;
using testing::CountOf;
using testing::ExpectRefused;
using testing::HttpClient;
using testing::HttpReply;
using testing::ParseSfList;
using testing::Sample;
using testing::ServiceUnderTest;
using testing::SfItem;
using testing::UrlEncode;

// How many times `needle` occurs in `text`.
size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Early in a minute: a client blocked now stays blocked for most of it.
const Instant kStart = FromUnix(1'800'000'010);

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(memcached_.running()) << memcached_.error(); }

  // The options `hourglass serve` runs with, on the policy `yaml` (written to a file of this
  // test): a long-running engine, the store's figures never read (nothing follows the clock).
  ServiceOptions Options(const std::string& yaml) {
    std::ofstream(policy_path_) << yaml;
    ServiceOptions options;
    options.policy_path = policy_path_;
    options.engine.hot_path = HotPathOptions::LongRunning();
    options.stats_interval = std::chrono::seconds{0};
    options.http.threads = 2;
    return options;
  }
  // A service on the test's memcached at kStart, with the options `configure` changes.
  std::unique_ptr<ServiceUnderTest> Serve(
      const std::string& yaml, const std::function<void(ServiceOptions&)>& configure = nullptr,
      StoreOptions store = ServiceUnderTest::DefaultStoreOptions()) {
    ServiceOptions options = Options(yaml);
    if (configure) configure(options);
    auto service = std::make_unique<ServiceUnderTest>("memcached://" + memcached_.address(),
                                                      std::move(options), kStart, store);
    EXPECT_TRUE(service->ready()) << service->error();
    return service;
  }
  static StoreOptions Timeouts(std::chrono::milliseconds timeout) {
    StoreOptions options = ServiceUnderTest::DefaultStoreOptions();
    options.network.io_timeout = timeout;
    options.network.connect_timeout = timeout;
    return options;
  }

  testing::MemcachedServer memcached_;
  std::string policy_path_ = testing::UniqueTempPath("service-test.yaml");
};

TEST_F(ServiceTest, ChecksAreAllowedUpToTheLimitThenDeniedWithRateLimitFields) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m, 10/h]\n");
  HttpClient client(serve->port());
  for (int i = 1; i <= 4; ++i) {
    HttpReply r = client.Post("/v1/check", CheckBody("signup", "ann@example.com"));
    ASSERT_EQ(r.status, i <= 3 ? 200 : 429) << r.body;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["allowed"], i <= 3);
    EXPECT_EQ(body["limits"][0]["count"], std::min(i, 3));
    const std::vector<SfItem> policy = ParseSfList(r.Header("ratelimit-policy"));
    ASSERT_EQ(policy.size(), 2u) << r.Header("ratelimit-policy");
    EXPECT_EQ(policy[0].name, "3/m");
    EXPECT_EQ(policy[0].params.at("q"), 3);
    EXPECT_EQ(policy[0].params.at("w"), 60);
    EXPECT_EQ(policy[1].params.at("q"), 10);
    EXPECT_EQ(policy[1].params.at("w"), 3600);
    const std::vector<SfItem> current = ParseSfList(r.Header("ratelimit"));
    ASSERT_EQ(current.size(), 1u) << r.Header("ratelimit");
    EXPECT_EQ(current[0].name, "3/m");  // the most constraining limit
    EXPECT_EQ(current[0].params.at("r"), std::max(0, 3 - i));
    if (i <= 3) {
      EXPECT_EQ(r.Header("retry-after"), "");
    } else {
      // All three hits are in this second: the room frees up in 60 s, never earlier.
      const int64_t retry = std::stoll(r.Header("retry-after"));
      EXPECT_GE(retry, 59);
      EXPECT_LE(retry, 60);
      EXPECT_EQ(current[0].params.at("t"), retry);
    }
  }
  EXPECT_EQ(CountOf(client, "signup", "ann@example.com", "1m"), 3u);  // the denial was taken back
}

TEST_F(ServiceTest, AListIsDeniedIfAnyIsAndThenNoneOfItIsCounted) {
  auto serve =
      Serve("events:\n  signup_ip:\n    limits: [100/m]\n  signup_email:\n    limits: [1/m]\n");
  HttpClient client(serve->port());
  const std::string both = json{{"checks",
                                 {{{"event", "signup_ip"}, {"feature", "203.0.113.7"}},
                                  {{"event", "signup_email"}, {"feature", "ann@example.com"}}}}}
                               .dump();
  HttpReply first = client.Post("/v1/check", both);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(json::parse(first.body)["checks"].size(), 2u);
  HttpReply second = client.Post("/v1/check", both);
  ASSERT_EQ(second.status, 429) << second.body;
  const json body = json::parse(second.body);
  EXPECT_FALSE(body["allowed"].get<bool>());
  EXPECT_FALSE(body["checks"][0]["recorded"].get<bool>());
  EXPECT_NE(second.Header("retry-after"), "");
  EXPECT_EQ(CountOf(client, "signup_ip", "203.0.113.7", "1m"), 1u);
  EXPECT_EQ(CountOf(client, "signup_email", "ann@example.com", "1m"), 1u);
}

TEST_F(ServiceTest, BadInputIsAClearErrorWithTheRightStatus) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n");
  HttpClient client(serve->port());
  ExpectRefused(
      client,
      {
          {"POST", "/v1/check", "{\"event\":", 400, "not valid JSON"},
          {"POST", "/v1/check", "{\"event\":\"signup\"}", 400, "\"feature\" must be a string"},
          {"POST", "/v1/check", "{\"event\":\"\",\"feature\":\"x\"}", 400, "\"event\" must be"},
          {"POST", "/v1/check", CheckBody("signup", "x", 0), 400, "\"cost\" must be"},
          {"POST", "/v1/check", "[1,2]", 400, "expected a JSON object"},
          {"POST", "/v1/check", "{\"checks\":[]}", 400, "list of 1 to 16"},
          {"POST", "/v1/check", CheckBody("nosuch", "x"), 404, "unknown event \"nosuch\""},
          {"POST", "/v1/check", CheckBody("signup", std::string(65537, 'f')), 400,
           "at most 65536 bytes"},
          {"POST", "/v1/check", CheckBody("signup", std::string(300'000, 'f')), 413,
           "larger than 262144 bytes"},
          {"GET", "/v1/count?event=signup&feature=x&window=5q", "", 400, "window \"5q\""},
          {"GET", "/v1/count?event=signup&feature=x&window=2d", "", 400, "retention"},
          {"GET", "/v1/count?event=signup", "", 400, "\"feature\" is missing"},
          {"GET", "/v1/count?event=signup&feature=x&colour=red", "", 400,
           "unknown query parameter"},
          {"PUT", "/v1/check", "", 405, "use POST"},
          {"GET", "/v2/nothing", "", 404, "no such endpoint"},
          {"GET", "/v1/auth/signup", "", 400, "X-Real-IP is missing"},
      });
  // Nothing was counted by any of them, and the server still answers.
  EXPECT_EQ(CountOf(client, "signup", "x", "1m"), 0u);
}

TEST_F(ServiceTest, HostileFeaturesInJsonAreCountedAsThemselves) {
  auto serve = Serve("events:\n  signup:\n    limits: [100/m]\n");
  HttpClient client(serve->port());
  const std::vector<std::string> features = {std::string("\0", 1),
                                             "a\r\nflush_all\r\n",
                                             std::string(10 * 1024, 'z'),
                                             "caf\xc3\xa9",
                                             "%:#",
                                             ""};
  for (size_t i = 0; i < features.size(); ++i) {
    for (size_t n = 0; n <= i; ++n) {
      HttpReply r = client.Post("/v1/check", CheckBody("signup", features[i]));
      ASSERT_EQ(r.status, 200) << i << ": " << r.body.substr(0, 200);
    }
  }
  // Read back through a check (the 10 KB feature does not fit a query string under the 8 KiB
  // header limit, which answers 431) and, for the others, through /v1/count.
  for (size_t i = 0; i < features.size(); ++i) {
    HttpReply r = client.Post("/v1/check", CheckBody("signup", features[i]));
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["limits"][0]["count"], i + 2) << "feature " << i;
    if (features[i].size() > 1024) {
      EXPECT_EQ(
          client.Get("/v1/count?event=signup&window=1m&feature=" + UrlEncode(features[i])).status,
          431);
      continue;
    }
    EXPECT_EQ(CountOf(client, "signup", features[i], "1m"), i + 2) << "feature " << i;
  }
}

TEST_F(ServiceTest, HitCountAndResetWithAnAdminToken) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n",
                     [](ServiceOptions& o) { o.api.admin_token = "s3cret"; });
  HttpClient client(serve->port());
  EXPECT_EQ(client.Post("/v1/hit", CheckBody("signup", "bob", 2)).status, 401);
  const std::map<std::string, std::string> auth = {{"Authorization", "Bearer s3cret"}};
  HttpReply hit = client.Send("POST", "/v1/hit", CheckBody("signup", "bob", 2), auth);
  ASSERT_EQ(hit.status, 200) << hit.body;
  EXPECT_EQ(CountOf(client, "signup", "bob", "1m"), 2u);
  EXPECT_EQ(client.Send("DELETE", "/v1/counters?event=signup&feature=bob").status, 401);
  HttpReply reset = client.Send("DELETE", "/v1/counters?event=signup&feature=bob", "", auth);
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_GT(json::parse(reset.body)["deleted"].get<uint64_t>(), 0u);
  EXPECT_EQ(CountOf(client, "signup", "bob", "1m"), 0u);
}

// The scheme is case-insensitive (RFC 9110), the token is not.
TEST_F(ServiceTest, AnAdminTokensSchemeIsAnyCaseAndItsTokenExact) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n",
                     [](ServiceOptions& o) { o.api.admin_token = "s3cret"; });
  HttpClient client(serve->port());
  for (const char* accepted : {"Bearer s3cret", "bearer s3cret", "BEARER  s3cret"}) {
    const std::map<std::string, std::string> auth = {{"Authorization", accepted}};
    EXPECT_EQ(client.Send("POST", "/v1/hit", CheckBody("signup", "bob"), auth).status, 200)
        << accepted;
  }
  for (const char* refused : {"Bearer S3CRET", "Bearer s3cre", "Bearer s3crett", "Bearers3cret",
                              "Basic s3cret", "Bearer", "s3cret"}) {
    const std::map<std::string, std::string> auth = {{"Authorization", refused}};
    HttpReply r = client.Send("POST", "/v1/hit", CheckBody("signup", "bob"), auth);
    EXPECT_EQ(r.status, 401) << refused;
    EXPECT_EQ(r.Header("www-authenticate"), "Bearer") << refused;
  }
  EXPECT_EQ(CountOf(client, "signup", "bob", "1m"), 3u) << "only the accepted hits counted";
}

TEST_F(ServiceTest, InspectShowsEachLevelsBucketsAndTheWindows) {
  auto serve = Serve("events:\n  signup:\n    limits: [10/m]\n");
  HttpClient client(serve->port());
  for (int i = 0; i < 3; ++i) client.Post("/v1/check", CheckBody("signup", "ann"));
  HttpReply r = client.Get("/v1/inspect?event=signup&feature=ann");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  ASSERT_EQ(body["seconds"].size(), 60u);
  ASSERT_EQ(body["minutes"].size(), 60u);
  ASSERT_EQ(body["hours"].size(), 24u);
  uint64_t seconds = 0;
  for (const json& v : body["seconds"]) seconds += v.get<uint64_t>();
  EXPECT_EQ(seconds, 3u);  // the last 60 seconds hold the three hits (a second boundary apart)
  EXPECT_EQ(body["hours"].back(), 3);
  EXPECT_EQ(body["windows"][3]["window"], 86400);
  EXPECT_EQ(body["windows"][3]["count"], 3);
  EXPECT_EQ(client.Get("/v1/inspect?event=signup").status, 400);
}

TEST_F(ServiceTest, AuthEndpointAnswersNginxWith204Or403) {
  auto serve = Serve("events:\n  url_shorten:\n    limits: [2/m]\n");
  HttpClient client(serve->port());
  const std::map<std::string, std::string> ip = {{"X-Real-IP", "198.51.100.9"}};
  EXPECT_EQ(client.Send("GET", "/v1/auth/url_shorten", "", ip).status, 204);
  EXPECT_EQ(client.Send("GET", "/v1/auth/url_shorten", "", ip).status, 204);
  HttpReply denied = client.Send("GET", "/v1/auth/url_shorten", "", ip);
  EXPECT_EQ(denied.status, 403);
  EXPECT_GE(std::stoll(denied.Header("retry-after")), 59);
  EXPECT_EQ(client.Send("GET", "/v1/auth/nosuch", "", ip).status, 404);
}

TEST_F(ServiceTest, TopAndPolicyAreAdminViewsThatRefuseBadQueries) {
  auto serve =
      Serve("events:\n  signup:\n    limits: [1/m]\n    overrides:\n      vip: {limits: [9/m]}\n",
            [](ServiceOptions& o) { o.api.admin_token = "tok"; });
  HttpClient client(serve->port());
  const std::map<std::string, std::string> auth = {{"Authorization", "Bearer tok"}};
  for (int i = 0; i < 3; ++i) client.Post("/v1/check", CheckBody("signup", "ann"));
  client.Post("/v1/check", CheckBody("signup", "bob"));
  EXPECT_EQ(client.Get("/v1/top?event=signup").status, 401) << "admin only";
  HttpReply top = client.Send("GET", "/v1/top?event=signup&window=1m&n=5", "", auth);
  ASSERT_EQ(top.status, 200) << top.body;
  const json t = json::parse(top.body);
  EXPECT_EQ(t["by"], "denied");
  EXPECT_EQ(t["window"], 60);
  EXPECT_EQ(t["total"], 2);
  ASSERT_EQ(t["features"].size(), 1u);
  EXPECT_EQ(t["features"][0]["feature"], "ann");
  EXPECT_EQ(t["features"][0]["estimate"], 2);
  EXPECT_EQ(t["windows"], json::array({60}));
  HttpReply hits = client.Send("GET", "/v1/top?event=signup&by=hits", "", auth);
  EXPECT_EQ(json::parse(hits.body)["total"], 4);
  for (const auto& [query, status, says] : std::vector<std::tuple<std::string, int, std::string>>{
           {"?event=signup&window=20m", 400, "window=20m: use whole minutes from 1m to 15m"},
           {"?event=signup&window=90s", 400, "whole minutes"},
           {"?event=signup&by=allowed", 400, "by=allowed: use hits or denied"},
           {"?event=signup&n=0", 400, "n=0: use a number of rows from 1 to 1000"},
           {"?event=signup&feature=x", 400, "unknown query parameter \"feature\""},
           {"?window=5m", 400, "\"event\" is missing"},
           {"?event=sigup", 404, "unknown event \"sigup\""}}) {
    HttpReply r = client.Send("GET", "/v1/top" + query, "", auth);
    EXPECT_EQ(r.status, status) << query << " " << r.body;
    const json error = json::parse(r.body, nullptr, false);
    EXPECT_NE(error.value("error", "").find(says), std::string::npos) << query << " " << r.body;
  }
  HttpReply policy = client.Send("GET", "/v1/policy", "", auth);
  ASSERT_EQ(policy.status, 200) << policy.body;
  const json p = json::parse(policy.body);
  EXPECT_EQ(p["file"], policy_path_);
  EXPECT_EQ(p["events"]["signup"]["limits"], json::array({"1/m"}));
  EXPECT_EQ(p["events"]["signup"]["overrides"]["vip"], json::array({"9/m"}));
  EXPECT_EQ(p["events"]["signup"]["mode"], "admitted");
  auto closed = Serve("events:\n  signup:\n    limits: [1/m]\n",
                      [](ServiceOptions& o) { o.api.admin = false; });
  EXPECT_EQ(HttpClient(closed->port()).Get("/v1/top?event=signup").status, 403);
  EXPECT_EQ(HttpClient(closed->port()).Get("/v1/policy").status, 403);
}

// Denials are logged by default, sampled: never a line per request; the rest of a burst is told
// within a second even when no denial follows, naming its last feature; and lines stand for every
// denial, each once. Off when asked.
TEST_F(ServiceTest, DenialsAreLoggedSampledAndABurstsRestWithinASecond) {
  auto quiet = Serve("events:\n  signup:\n    limits: [1/m]\n",
                     [](ServiceOptions& o) { o.log_denials = false; });
  auto sampled = Serve("events:\n  signup:\n    limits: [1/m]\n");
  for (ServiceUnderTest* serve : {quiet.get(), sampled.get()}) {
    HttpClient client(serve->port());
    for (int i = 0; i < 20; ++i) {
      client.Post("/v1/check", CheckBody("signup", i < 19 ? "ann\nforged" : "bob"));
    }
  }
  EXPECT_EQ(quiet->log().find("denied:"), std::string::npos) << "turned off";
  ASSERT_TRUE(sampled->WaitForLog("info denied: signup \"ann\\x0aforged\" (1 denial of signup"))
      << sampled->log();
  EXPECT_EQ(Occurrences(sampled->log(), "denied: "), 1u)
      << "19 denials within a second: " << sampled->log();
  // One store: both were used by the quiet service first, so every check here was denied.
  sampled->clock().Advance(Seconds{1});  // no denial after the burst
  ASSERT_TRUE(sampled->WaitForLog(
      "info denied: signup \"bob\" (19 denials of signup since the last such line)"))
      << sampled->log();
  EXPECT_EQ(Occurrences(sampled->log(), "denied: "), 2u) << sampled->log();
}

TEST_F(ServiceTest, AKilledStoreMakesItUnreadyAndChecksFollowTheFailureMode) {
  auto serve = Serve(
      "events:\n  open_ev:\n    limits: [3/m]\n    on_store_failure: open\n"
      "  closed_ev:\n    limits: [3/m]\n    on_store_failure: closed\n",
      nullptr, Timeouts(std::chrono::milliseconds{300}));
  HttpClient client(serve->port());
  EXPECT_EQ(client.Get("/readyz").status, 200);
  memcached_.Kill();
  HttpReply unready = client.Get("/readyz");
  EXPECT_EQ(unready.status, 503);
  EXPECT_NE(unready.body.find("cannot be reached"), std::string::npos) << unready.body;
  HttpReply open = client.Post("/v1/check", CheckBody("open_ev", "x"));
  EXPECT_EQ(open.status, 200) << open.body;
  EXPECT_TRUE(json::parse(open.body)["degraded"].get<bool>());
  HttpReply closed = client.Post("/v1/check", CheckBody("closed_ev", "x"));
  EXPECT_EQ(closed.status, 429) << closed.body;
  EXPECT_TRUE(json::parse(closed.body)["degraded"].get<bool>());
  // Told apart from real decisions by a header naming the failure, and in the log once.
  const std::string failed_server = "memcached " + memcached_.address();
  EXPECT_EQ(open.Header("hourglass-degraded").rfind(failed_server, 0), 0u)
      << open.Header("hourglass-degraded");
  EXPECT_EQ(closed.Header("hourglass-degraded").rfind(failed_server, 0), 0u);
  HttpReply auth = client.Send("GET", "/v1/auth/closed_ev", "", {{"X-Real-IP", "192.0.2.1"}});
  EXPECT_EQ(auth.status, 403);
  EXPECT_EQ(auth.Header("hourglass-degraded").rfind(failed_server, 0), 0u);
  EXPECT_TRUE(serve->WaitForLog(" error " + failed_server + " unreachable (")) << serve->log();
  const std::string metrics = client.Get("/metrics").body;
  EXPECT_GE(
      Sample(metrics, "hourglass_store_errors_total{server=\"" + memcached_.address() + "\"}"), 2)
      << metrics;
  EXPECT_EQ(
      Sample(metrics, "hourglass_checks_total{event=\"open_ev\",result=\"degraded_allowed\"}"), 1);
  ASSERT_TRUE(memcached_.Start());
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {  // after the store's fail-fast interval
    ready = client.Get("/readyz").status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  EXPECT_TRUE(ready);
  HttpReply back = client.Post("/v1/check", CheckBody("closed_ev", "x"));
  EXPECT_EQ(back.status, 200);
  EXPECT_EQ(back.Header("hourglass-degraded"), "");
  EXPECT_TRUE(serve->WaitForLog(" info " + failed_server + " answers again")) << serve->log();
  EXPECT_EQ(Occurrences(serve->log(), " unreachable ("), 1u)
      << "one line per transition, not per request:\n"
      << serve->log();
}

TEST_F(ServiceTest, MetricsCountDecisionsByEventAndResultNeverByFeature) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n");
  HttpClient client(serve->port());
  for (int i = 0; i < 4; ++i) client.Post("/v1/check", CheckBody("signup", "secret-feature"));
  ASSERT_TRUE(serve->service().Reload());
  HttpReply r = client.Get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type").rfind("text/plain", 0), 0u);
  const std::string text = r.body;
  EXPECT_EQ(Sample(text, "hourglass_checks_total{event=\"signup\",result=\"allowed\"}"), 3);
  EXPECT_EQ(Sample(text, "hourglass_checks_total{event=\"signup\",result=\"denied\"}"), 1);
  // 3 of 3 and the denial's 3 (its own hit taken back): at or over 80% of the limit.
  EXPECT_EQ(Sample(text, "hourglass_checks_near_limit_total{event=\"signup\"}"), 2);
  EXPECT_EQ(Sample(text, "hourglass_request_duration_seconds_count{endpoint=\"/v1/check\"}"), 4);
  EXPECT_GE(Sample(text, "hourglass_round_trips_total"), 4);
  EXPECT_EQ(Sample(text, "hourglass_policy_reloads_total{result=\"ok\"}"), 1);
  EXPECT_EQ(text.find("secret-feature"), std::string::npos) << "a label per feature";
}

// What an alert needs before anything happened: the version, the policy's load and its time,
// reloads and connection events at 0; a refused reload turns the gauge to 0 and keeps the time
// of the policy still in force; a good one turns it back.
TEST_F(ServiceTest, MetricsAnAlertNeedsAreThereFromTheStart) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n");
  HttpClient client(serve->port());
  std::string text = client.Get("/metrics").body;
  EXPECT_EQ(Sample(text, "hourglass_build_info{version=\"" HOURGLASS_TEST_VERSION "\"}"), 1)
      << text;
  EXPECT_EQ(Sample(text, "hourglass_config_last_reload_successful"), 1);
  EXPECT_EQ(Sample(text, "hourglass_config_last_reload_success_timestamp_seconds"),
            static_cast<double>(ToUnix(kStart)));
  EXPECT_EQ(Sample(text, "hourglass_policy_reloads_total{result=\"ok\"}"), 0);
  EXPECT_EQ(Sample(text, "hourglass_policy_reloads_total{result=\"failed\"}"), 0);
  EXPECT_EQ(Sample(text, "hourglass_checks_total{event=\"signup\",result=\"denied\"}"), 0);
  EXPECT_EQ(Sample(text, "hourglass_checks_near_limit_total{event=\"signup\"}"), 0);
  EXPECT_EQ(Sample(text,
                   "hourglass_connection_events_total{event=\"refused_busy\",listener="
                   "\"http\"}"),
            0);

  std::ofstream(policy_path_) << "events:\n  signup:\n    limits: [3/fortnight]\n";
  EXPECT_FALSE(serve->service().Reload());
  text = client.Get("/metrics").body;
  EXPECT_EQ(Sample(text, "hourglass_config_last_reload_successful"), 0);
  EXPECT_EQ(Sample(text, "hourglass_config_last_reload_success_timestamp_seconds"),
            static_cast<double>(ToUnix(kStart)));
  EXPECT_EQ(Sample(text, "hourglass_policy_reloads_total{result=\"failed\"}"), 1);
  std::ofstream(policy_path_) << "events:\n  signup:\n    limits: [4/m]\n  login:\n    limits: "
                                 "[5/m]\n";
  EXPECT_TRUE(serve->service().Reload());
  text = client.Get("/metrics").body;
  EXPECT_EQ(Sample(text, "hourglass_config_last_reload_successful"), 1);
  EXPECT_EQ(Sample(text, "hourglass_checks_total{event=\"login\",result=\"allowed\"}"), 0)
      << "an event a reload added";
}

TEST_F(ServiceTest, ShadowEventsAreDecidedAndCountedButAlwaysAllowed) {
  auto serve = Serve("events:\n  trial:\n    limits: [1/m]\n    shadow: true\n");
  HttpClient client(serve->port());
  HttpReply first = client.Post("/v1/check", CheckBody("trial", "x"));
  EXPECT_EQ(first.status, 200);
  EXPECT_FALSE(json::parse(first.body).contains("shadow_denied"));
  HttpReply second = client.Post("/v1/check", CheckBody("trial", "x"));
  EXPECT_EQ(second.status, 200) << second.body;
  const json body = json::parse(second.body);
  EXPECT_TRUE(body["allowed"].get<bool>());
  EXPECT_TRUE(body["shadow_denied"].get<bool>());
  // What it would have done: the limit was full, and this hit was not counted.
  EXPECT_EQ(body["limits"][0]["remaining"], 0);
  EXPECT_FALSE(body["recorded"].get<bool>());
  EXPECT_EQ(second.Header("retry-after"), "");
  const std::map<std::string, std::string> ip = {{"X-Real-IP", "x"}};
  EXPECT_EQ(client.Send("GET", "/v1/auth/trial", "", ip).status, 204);
  const std::string metrics = client.Get("/metrics").body;
  EXPECT_EQ(Sample(metrics, "hourglass_checks_total{event=\"trial\",result=\"shadow_denied\"}"), 2);
  EXPECT_EQ(Sample(metrics, "hourglass_checks_total{event=\"trial\",result=\"allowed\"}"), 1);
  EXPECT_EQ(CountOf(client, "trial", "x", "1m"), 1u);  // admitted mode: the denials took back
}

// A blocked client's attempts are sent without waiting for memcached's answer; an attempt
// memcached refuses is counted at /metrics once the connection that sent it is used again.
TEST_F(ServiceTest, MetricsCountFireAndForgetWritesTheStoreRefused) {
  // memcached refuses an increment of a counter that is not a number (the counters layout).
  StoreOptions counters = ServiceUnderTest::DefaultStoreOptions();
  counters.network.layout = MemcachedLayout::kCounters;
  auto serve =
      Serve("events:\n  login:\n    limits: [1/m]\n    mode: attempts\n", nullptr, counters);
  HttpClient client(serve->port());
  // The blocked-client cache holds mallory only while her denial is certain from the coarse
  // buckets: until her minute ends, long after now + 3 (kStart is early in a minute).
  const int64_t now = ToUnix(kStart);
  // A non-numeric value in the per-second buckets mallory's attempts go to from now + 3 on.
  for (int64_t t : {now + 3, now + 4}) {
    const std::string key = "hg:login:mallory:1:" + std::to_string(t);
    ASSERT_EQ(memcached_.Raw("set " + key + " 0 600 1\r\nx\r\n"), "STORED\r\n");
  }
  EXPECT_EQ(client.Post("/v1/check", CheckBody("login", "mallory")).status, 200);
  EXPECT_EQ(client.Post("/v1/check", CheckBody("login", "mallory")).status, 429);
  const std::string metrics = "hourglass_store_unconfirmed_failures_total";
  EXPECT_EQ(Sample(client.Get("/metrics").body, metrics), 0);
  serve->clock().Set(FromUnix(now + 3));
  HttpReply blocked = client.Post("/v1/check", CheckBody("login", "mallory"));
  EXPECT_EQ(blocked.status, 429);
  EXPECT_EQ(json::parse(blocked.body)["blocked_hits"], 1) << "answered locally: " << blocked.body;
  // Other clients' checks use the pooled connections and read what was left unread on them.
  double refused = 0;
  for (int i = 0; i < 100 && refused < 1; ++i) {
    EXPECT_EQ(client.Post("/v1/check", CheckBody("login", "user" + std::to_string(i))).status, 200);
    refused = Sample(client.Get("/metrics").body, metrics);
  }
  EXPECT_EQ(refused, 1);
}

// memcached evicts live items when full and tells no client: the service reads its stats, and
// shows evictions in /metrics and as a warning on stderr.
TEST_F(ServiceTest, EvictionsOfAFullMemcachedShowInMetricsAndAWarning) {
  testing::MemcachedServer small("127.0.0.1", 8);
  ASSERT_TRUE(small.running()) << small.error();
  ServiceOptions options = Options("events:\n  signup:\n    limits: [5/m]\n");
  options.stats_interval = std::chrono::seconds{1};
  ServiceUnderTest serve("memcached://" + small.address(), options, kStart);
  ASSERT_TRUE(serve.ready()) << serve.error();
  HttpClient client(serve.port());
  const std::string evictions =
      "hourglass_memcached_evictions_total{server=\"" + small.address() + "\"}";
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "victim")).status, 200);
  double seen = -1;
  for (int i = 0; i < 100 && seen < 0; ++i) {  // the first read of the stats
    seen = Sample(client.Get("/metrics").body, evictions);
    if (seen < 0) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  EXPECT_EQ(seen, 0);
  // Another tenant (or an attacker's fresh features) fills the server.
  ASSERT_TRUE(small.Fill(200000));
  ASSERT_GT(small.Stat("evictions"), 0);
  EXPECT_TRUE(serve.WaitForLog("memcached " + small.address() + " evicted",
                               std::chrono::milliseconds{5000}))
      << serve.log();
  EXPECT_GT(Sample(client.Get("/metrics").body, evictions), 0);
  EXPECT_EQ(Sample(client.Get("/metrics").body,
                   "hourglass_memcached_limit_bytes{server=\"" + small.address() + "\"}"),
            8 * 1048576);
}

// 200 checks of one feature at once, over 16 connections spread on two servers sharing one
// memcached: admitted mode admits at most the limit; attempts mode counts every one.
TEST_F(ServiceTest, TwoServersNeverAdmitMoreThanTheLimitAndAttemptsLoseNone) {
  const std::string yaml =
      "events:\n  admitted_ev:\n    limits: [10/m]\n"
      "  attempts_ev:\n    limits: [10/m]\n    mode: attempts\n";
  auto a = Serve(yaml);
  auto b = Serve(yaml);
  for (const std::string event : {"admitted_ev", "attempts_ev"}) {
    std::atomic<int> admitted{0}, answered{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 16; ++c) {
      clients.emplace_back([&, c] {
        HttpClient client((c % 2 == 0 ? a : b)->port());
        for (int i = c; i < 200; i += 16) {
          HttpReply r = client.Post("/v1/check", CheckBody(event, "hot"));
          answered += r.status == 200 || r.status == 429;
          admitted += r.status == 200;
        }
      });
    }
    for (std::thread& t : clients) t.join();
    EXPECT_EQ(answered.load(), 200) << event;
    EXPECT_LE(admitted.load(), 10) << event;
    EXPECT_GE(admitted.load(), 1) << event;
    HttpClient client(a->port());
    uint64_t stored = CountOf(client, event, "hot", "1m");
    // Blocked clients' attempts, and the take-backs of denied checks, are sent without waiting
    // for memcached's answer, on other connections than this read: the count converges to every
    // attempt (attempts mode) or to the admitted hits (admitted mode).
    const uint64_t expected = event == "attempts_ev" ? 200u : admitted.load();
    for (int i = 0; stored != expected && i < 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
      stored = CountOf(client, event, "hot", "1m");
    }
    EXPECT_EQ(stored, expected) << event;
  }
}

// A list with one bad check is refused whole: its valid checks count nothing.
TEST_F(ServiceTest, AListWithOneBadCheckIsRefusedAndCountsNothing) {
  auto serve = Serve("events:\n  signup:\n    limits: [5/m]\n");
  HttpClient client(serve->port());
  const std::string body =
      json{{"checks",
            {{{"event", "signup"}, {"feature", "ann"}},
             {{"event", "signup"}, {"feature", std::string(kMaxFieldBytes + 1, 'f')}}}}}
          .dump();
  HttpReply r = client.Post("/v1/check", body);
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 200);
  EXPECT_NE(r.body.find("checks[1]: feature of 65537 bytes"), std::string::npos) << r.body;
  EXPECT_EQ(CountOf(client, "signup", "ann", "1m"), 0u);
}

// A limit the retention cannot answer refuses the policy at start (exit 2, naming file:line)
// and on reload (the old policy stays), instead of failing every check later.
// A check may carry its tenant's limits where the event allows it, within its bounds; anywhere
// else, or beyond them, it is refused and counts nothing. "record": false asks without counting.
TEST_F(ServiceTest, ChecksCarryLimitsWhereTheEventAllowsAndAPeekCountsNothing) {
  auto serve = Serve(
      "events:\n  api:\n    limits: [2/m]\n    request_limits: {max_hits: 1000, max_window: "
      "1h}\n  plain:\n    limits: [5/m]\n");
  HttpClient client(serve->port());
  const auto check = [&](const std::string& event, const std::string& feature, json extra) {
    json body = {{"event", event}, {"feature", feature}};
    body.update(extra);
    return client.Post("/v1/check", body.dump());
  };
  const json plan = {{"limits", {"3/m", "100/h"}}};
  for (int i = 1; i <= 4; ++i) {
    HttpReply r = check("api", "tenant-a", plan);
    ASSERT_EQ(r.status, i <= 3 ? 200 : 429) << r.body;
    EXPECT_EQ(json::parse(r.body)["limits"][0]["spec"], "3/m");
    const std::vector<SfItem> policy = ParseSfList(r.Header("ratelimit-policy"));
    ASSERT_EQ(policy.size(), 2u) << r.Header("ratelimit-policy");
    EXPECT_EQ(policy[0].params.at("q"), 3);
    EXPECT_EQ(policy[1].params.at("w"), 3600);
  }
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(check("api", "tenant-b", json::object()).status, i <= 2 ? 200 : 429)
        << "without limits, the event's own";
  }
  EXPECT_EQ(check("api", "tenant-a", {{"limits", {"10/m"}}}).status, 200)
      << "a new plan applies at once";
  EXPECT_EQ(CountOf(client, "api", "tenant-a", "1m"), 4u);

  // Peeks: the answer a check would get, nothing counted.
  HttpReply full = check("api", "tenant-b", {{"record", false}});
  EXPECT_EQ(full.status, 429) << full.body;
  HttpReply room = check("api", "tenant-c", {{"record", false}, {"cost", 2}});
  ASSERT_EQ(room.status, 200) << room.body;
  EXPECT_EQ(json::parse(room.body)["recorded"], false);
  EXPECT_EQ(json::parse(room.body)["limits"][0]["remaining"], 2) << "2 of 2 still fit";
  EXPECT_EQ(CountOf(client, "api", "tenant-b", "1m"), 2u);
  EXPECT_EQ(CountOf(client, "api", "tenant-c", "1m"), 0u);

  ExpectRefused(
      client,
      {{"POST", "/v1/check", R"({"event":"plain","feature":"x","limits":["9/m"]})", 400,
        "event \"plain\" takes no limits from a request"},
       {"POST", "/v1/check", R"({"event":"api","feature":"x","limits":["1001/m"]})", 400,
        "at most 1000 hits over at most 1h"},
       {"POST", "/v1/check", R"({"event":"api","feature":"x","limits":["5/2h"]})", 400,
        "limit 5/2h is outside"},
       {"POST", "/v1/check", R"({"event":"api","feature":"x","limits":["5/m"],"record":1})", 400,
        "\"record\" must be true or false"},
       {"POST", "/v1/check",
        R"({"checks":[{"event":"plain","feature":"x"},{"event":"api","feature":"x","limits":["1/fortnight"]}]})",
        400, "checks[1]: \"limits\""}});
  EXPECT_EQ(CountOf(client, "plain", "x", "1m"), 0u);
  EXPECT_EQ(CountOf(client, "api", "x", "1m"), 0u);
}

// A tenant's monthly plan, carried by its requests: the calendar month on the tenant's clock
// (Europe/Berlin), as a spec string; it ends at that clock's midnight, not UTC's.
TEST_F(ServiceTest, ARequestCarriesAMonthlyPlanInItsTimeZone) {
  auto serve = Serve(
      "events:\n  api:\n    limits: [100/m]\n    request_limits: {max_hits: 100000, "
      "max_window: 32d}\n",
      [](ServiceOptions& o) { o.engine.retention = Seconds{33 * 86400}; });
  HttpClient client(serve->port());
  const json plan = {{"event", "api"},
                     {"feature", "tenant-berlin"},
                     {"limits", {"2/calendar month Europe/Berlin"}}};
  for (int i = 1; i <= 3; ++i) {
    HttpReply r = client.Post("/v1/check", plan.dump());
    ASSERT_EQ(r.status, i <= 2 ? 200 : 429) << r.body;
    EXPECT_EQ(json::parse(r.body)["limits"][0]["spec"], "2/calendar month Europe/Berlin");
  }
  ExpectRefused(
      client, {{"POST", "/v1/check",
                R"({"event":"api","feature":"x","limits":["2/calendar month Mars/Olympus"]})", 400,
                "unknown time zone \"Mars/Olympus\""}});
}

// Penalties through two services on a random trace, the clock they share moving by random
// fractions of a second: every decision is the one a model of the limit and the blocks gives at
// the decision's second, and so is every count. They share a store that expires keys on that
// clock (a server's TTLs, a penalty's 3 s among them, would run in real time).
TEST_F(ServiceTest, PenaltiesThroughTwoServicesFollowTheModelOnARandomTrace) {
  const ServiceOptions options =
      Options("events:\n  login:\n    limits: [3/2s]\n    block_for: 3s\n");
  ManualClock clock(kStart);
  MemoryStore store(clock);
  auto a = std::make_unique<ServiceUnderTest>(store, clock, options);
  auto b = std::make_unique<ServiceUnderTest>(store, clock, options);
  ASSERT_TRUE(a->ready() && b->ready()) << a->error() << b->error();
  std::deque<HttpClient> clients;
  clients.emplace_back(a->port());
  clients.emplace_back(b->port());
  struct Model {
    std::vector<int64_t> admitted;
    int64_t blocked_until = 0;
  };
  std::map<std::string, Model> model;
  std::mt19937 rng(20261125);
  int blocks = 0, blocked = 0;
  int64_t elapsed_ms = 0;
  for (int step = 0; step < 50; ++step) {
    elapsed_ms += rng() % 350;
    clock.Set(kStart + Seconds{elapsed_ms / 1000});
    const std::string feature = rng() % 2 == 0 ? "ann" : "bob";
    HttpReply r = clients[rng() % 2].Post("/v1/check", CheckBody("login", feature));
    ASSERT_TRUE(r.status == 200 || r.status == 429) << r.body;
    const json d = json::parse(r.body);
    const int64_t t = d["at"].get<int64_t>();
    Model& m = model[feature];
    const auto in_window = std::count_if(m.admitted.begin(), m.admitted.end(),
                                         [&](int64_t at) { return at > t - 2 && at <= t; });
    const bool was_blocked = m.blocked_until > t;
    const bool fits = !was_blocked && in_window < 3;
    ASSERT_EQ(d["allowed"].get<bool>(), fits) << "step " << step << " " << feature << " " << r.body;
    if (fits) {
      m.admitted.push_back(t);
      EXPECT_FALSE(d.contains("blocked_until"));
      continue;
    }
    if (!was_blocked) {
      m.blocked_until = t + 3;
      ++blocks;
    } else {
      ++blocked;
    }
    EXPECT_EQ(d["blocked_until"].get<int64_t>(), m.blocked_until) << "step " << step;
    EXPECT_GE(std::stoi(r.Header("retry-after")), m.blocked_until - t);
  }
  EXPECT_GT(blocks, 2);
  EXPECT_GT(blocked, 2);
  for (const auto& [feature, m] : model) {
    const json c =
        json::parse(clients[0].Get("/v1/count?event=login&feature=" + feature + "&window=1h").body);
    EXPECT_EQ(c["windows"][0]["count"].get<size_t>(), m.admitted.size()) << feature;
  }
}

// The service that resets a client stops denying it at once (its blocked-client cache forgets).
TEST_F(ServiceTest, AResetClearsTheServicesOwnDenialAtOnce) {
  auto serve = Serve("events:\n  signup:\n    limits: [2/h]\n");
  HttpClient client(serve->port());
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(client.Post("/v1/check", CheckBody("signup", "b")).status, 200);
  HttpReply denied = client.Post("/v1/check", CheckBody("signup", "b"));
  ASSERT_EQ(denied.status, 429);
  ASSERT_EQ(client.Send("DELETE", "/v1/counters?event=signup&feature=b").status, 200);
  HttpReply after = client.Post("/v1/check", CheckBody("signup", "b"));
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(json::parse(after.body)["limits"][0]["count"], 1);
}

// Ambiguous or mistyped requests are refused, naming the problem; nothing is counted.
TEST_F(ServiceTest, TyposAndAmbiguousBodiesAreRefusedAndUnknownEventsAre404Everywhere) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n");
  HttpClient client(serve->port());
  ExpectRefused(
      client,
      {
          {"POST", "/v1/check", R"({"event":"signup","feature":"x","cots":5})", 400,
           "unknown field \"cots\""},
          {"POST", "/v1/check", R"({"event":"signup","feature":"x","limit":"5/m"})", 400,
           "unknown field \"limit\""},
          {"POST", "/v1/check", R"({"event":"nosuch","event":"signup","feature":"x"})", 400,
           "field \"event\" is given twice"},
          {"POST", "/v1/check",
           R"({"event":"signup","feature":"y","checks":[{"event":"signup","feature":"x"}]})", 400,
           "a body with \"checks\" takes no other field (found \"event\")"},
          {"POST", "/v1/check", R"({"checks":[{"event":"signup","feature":"x","cots":1}]})", 400,
           "checks[0]: unknown field \"cots\""},
          {"GET", "/v1/count?event=nosuch&feature=x", "", 404, "unknown event \"nosuch\""},
          {"GET", "/v1/inspect?event=nosuch&feature=x", "", 404, "unknown event \"nosuch\""},
          {"DELETE", "/v1/counters?event=nosuch&feature=x", "", 404, "unknown event \"nosuch\""},
          {"POST", "/v1/hit", CheckBody("nosuch", "x"), 404, "unknown event \"nosuch\""},
      });
  EXPECT_EQ(CountOf(client, "signup", "x", "1m"), 0u);
  EXPECT_EQ(CountOf(client, "signup", "y", "1m"), 0u);
}

// Default windows follow the retention: with --retention 1h, count answers 1s 1m 1h.
TEST_F(ServiceTest, DefaultWindowsStopAtTheRetention) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n",
                     [](ServiceOptions& o) { o.engine.retention = Seconds{3600}; });
  HttpClient client(serve->port());
  HttpReply r = client.Get("/v1/count?event=signup&feature=x");
  ASSERT_EQ(r.status, 200) << r.body;
  const json windows = json::parse(r.body)["windows"];
  ASSERT_EQ(windows.size(), 3u) << r.body;
  EXPECT_EQ(windows[2]["window"], 3600);
  EXPECT_EQ(client.Get("/v1/inspect?event=signup&feature=x").status, 200);
}

// --exact-retry-after: Retry-After names the second the first hit leaves, as `check` does.
TEST_F(ServiceTest, ExactRetryAfterNamesTheSecondTheFirstHitLeaves) {
  auto serve = Serve("events:\n  signup:\n    limits: [2/m]\n",
                     [](ServiceOptions& o) { o.engine.exact_retry_after = true; });
  HttpClient client(serve->port());
  HttpReply first = client.Post("/v1/check", CheckBody("signup", "eve"));
  ASSERT_EQ(first.status, 200);
  const int64_t first_at = json::parse(first.body)["at"].get<int64_t>();
  serve->clock().Advance(Seconds{1});
  ASSERT_EQ(client.Post("/v1/check", CheckBody("signup", "eve")).status, 200);
  HttpReply denied = client.Post("/v1/check", CheckBody("signup", "eve"));
  ASSERT_EQ(denied.status, 429);
  const int64_t denied_at = json::parse(denied.body)["at"].get<int64_t>();
  ASSERT_GT(denied_at, first_at);
  EXPECT_EQ(std::stoll(denied.Header("retry-after")), first_at + 60 - denied_at)
      << "exact: the first hit leaves the window then";
}

// Behind one trusted proxy, a client that prepends its own X-Forwarded-For entries, or rotates
// through the addresses of its IPv6 /64, is still one client; a range override bans a network;
// a malformed header is refused and counts nothing.
TEST_F(ServiceTest, SpoofedForwardedForAndRotatingIpv6AddressesAreOneClient) {
  auto serve = Serve(
      "events:\n  url_shorten:\n    limits: [2/m]\n    feature: ip\n    overrides:\n"
      "      \"10.0.0.0/8\": {deny: true}\n",
      [](ServiceOptions& o) {
        o.api.feature_header = "X-Forwarded-For";
        o.api.trusted_proxies.hops = 1;
      });
  HttpClient client(serve->port());
  const auto auth = [&](const std::string& forwarded_for) {
    return client.Send("GET", "/v1/auth/url_shorten", "", {{"X-Forwarded-For", forwarded_for}})
        .status;
  };
  std::vector<int> spoofed, rotating;
  for (int i = 1; i <= 4; ++i) {
    spoofed.push_back(auth("6.6.6." + std::to_string(i) + ", 203.0.113.7"));
    rotating.push_back(auth("2001:db8:1:2::" + std::to_string(i)));
  }
  EXPECT_EQ(spoofed, (std::vector<int>{204, 204, 403, 403}));
  EXPECT_EQ(rotating, (std::vector<int>{204, 204, 403, 403}));
  EXPECT_EQ(auth("2001:db8:1:3::1"), 204) << "another /64 is another client";
  EXPECT_EQ(auth("10.200.0.1"), 403) << "inside the banned range";
  // The same client through the JSON API and the count endpoint, by any address of its /64.
  HttpReply r = client.Post("/v1/check", CheckBody("url_shorten", "2001:db8:1:2:ffff::9"));
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(CountOf(client, "url_shorten", "2001:db8:1:2::abcd", "1m"), 2u);
  EXPECT_EQ(CountOf(client, "url_shorten", "203.0.113.7", "1m"), 2u);
  // Refused, counted nowhere: not an address, or an address in a malformed list.
  EXPECT_EQ(auth("unknown"), 400);
  EXPECT_EQ(auth("198.51.100.1 203.0.113.8"), 400);
  r = client.Post("/v1/check", CheckBody("url_shorten", "not-an-address"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("counts IP addresses"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace hourglass
