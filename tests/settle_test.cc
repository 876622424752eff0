// POST /v1/settle as a token-budget gateway uses it: check with an estimated cost, settle the true
// cost with the check's settle_token once the response is known, upward or downward, at the
// decision's own second and once. Two real `hourglass serve` processes share a real memcached
// (each with its hot-path caches) and a settlement key; every count of every window and every
// decision is held against a brute-force log of what was settled, whatever replayed, forged or
// altered settlements arrive.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "memcached_server.h"
#include "prometheus_sample.h"
#include "serve_process.h"
#include "temp_path.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;
using testing::ServeProcess;
using testing::UrlEncode;

const char* kPolicy = R"(events:
  tokens:
    limits: [3000/m, 20000/h]
    settle: true
  plain:
    limits: [5/m]
)";

struct Charge {
  std::string feature;
  int64_t at = 0;
  uint64_t hits = 0;
};

// The hits of `feature` the log holds in the sliding window of `window` seconds ending at `at`.
uint64_t Truth(const std::vector<Charge>& log, const std::string& feature, int64_t at,
               int64_t window) {
  uint64_t sum = 0;
  for (const Charge& c : log) {
    if (c.feature == feature && c.at > at - window && c.at <= at) sum += c.hits;
  }
  return sum;
}

class SettleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memcached_.running()) << memcached_.error();
    policy_ = testing::UniqueTempPath("settle_policy.yaml");
    std::ofstream(policy_) << kPolicy;
    key_ = testing::UniqueTempPath("settle.key");
    std::ofstream(key_) << "b4Zk0c1fQ2m9sXpL7tRw3yVn8eHj6aGd\n";
  }
  void TearDown() override {
    std::remove(policy_.c_str());
    std::remove(key_.c_str());
  }
  // A service with a 1 s settle margin (a settlement 2 s after its decision writes into buckets
  // every service caches as final) and the deployment's settlement key.
  std::unique_ptr<ServeProcess> Serve(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--policy",        policy_, "--servers",         memcached_.address(),
        "--settle-margin", "1s",    "--settle-key-file", key_};
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServeProcess>(HOURGLASS_CLI, args);
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }
  static HttpReply Settle(HttpClient& client, const std::string& token, uint64_t actual) {
    return client.Post("/v1/settle", json{{"token", token}, {"actual", actual}}.dump());
  }
  // `token` with one character of its payload changed.
  static std::string Altered(std::string token, size_t at) {
    at %= token.find('.');
    token[at] = token[at] == 'A' ? 'B' : 'A';
    return token;
  }

  testing::MemcachedServer memcached_;
  std::string policy_, key_;
};

// A random trace of checks and settlements spread over two services: every admission is one a
// perfect limiter makes on the settled log, every count is the log's.
TEST_F(SettleTest, CountsAndDecisionsFollowEverySettlementOnEveryService) {
  auto a = Serve();
  auto b = Serve();
  std::deque<HttpClient> clients;
  clients.emplace_back(a->port());
  clients.emplace_back(b->port());
  std::mt19937 rng(20261125);
  const std::vector<std::string> features = {"tenant-1", "tenant-2", "tenant 3/\xc3\xa9&x"};
  std::vector<Charge> log;
  int admitted = 0, denied = 0, late = 0, replayed = 0, refused = 0;
  for (int step = 0; step < 60; ++step) {
    const std::string& feature = features[rng() % features.size()];
    HttpClient& checker = clients[rng() % 2];
    const uint64_t estimate = 1 + rng() % 400;
    HttpReply r = checker.Post(
        "/v1/check", json{{"event", "tokens"}, {"feature", feature}, {"cost", estimate}}.dump());
    ASSERT_TRUE(r.status == 200 || r.status == 429) << r.status << " " << r.body;
    const json d = json::parse(r.body);
    const int64_t at = d["at"].get<int64_t>();
    const bool fits = Truth(log, feature, at, 60) + estimate <= 3000 &&
                      Truth(log, feature, at, 3600) + estimate <= 20000;
    ASSERT_EQ(d["allowed"].get<bool>(), fits) << "step " << step << ": " << r.body;
    if (!fits) {
      ++denied;
      continue;
    }
    ++admitted;
    log.push_back(Charge{feature, at, estimate});
    const std::string token = d["settle_token"].get<std::string>();
    if (rng() % 10 < 2) continue;  // the estimate was right
    if (rng() % 8 == 0) {          // a slow response: settled after the settle margin
      ++late;
      std::this_thread::sleep_for(std::chrono::milliseconds{2100});
    }
    const uint64_t actual = rng() % 800;
    if (rng() % 4 == 0) {  // forged first: refused, changes nothing
      HttpReply forged = Settle(clients[rng() % 2], Altered(token, rng()), rng() % 800);
      ASSERT_EQ(forged.status, 400) << forged.body;
      ++refused;
    }
    HttpReply s = Settle(clients[rng() % 2], token, actual);
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(json::parse(s.body)["delta"].get<int64_t>(),
              static_cast<int64_t>(actual) - static_cast<int64_t>(estimate));
    log.back().hits = actual;
    if (rng() % 3 == 0) {  // sent again, to either service: applied once
      HttpReply again = Settle(clients[rng() % 2], token, rng() % 800);
      ASSERT_EQ(again.status, 409) << again.body;
      EXPECT_TRUE(json::parse(again.body)["replayed"].get<bool>());
      ++replayed;
    }
    for (HttpClient& reader : clients) {
      HttpReply c = reader.Get("/v1/count?event=tokens&feature=" + UrlEncode(feature) +
                               "&window=10s&window=1m&window=1h");
      ASSERT_EQ(c.status, 200) << c.body;
      const json counts = json::parse(c.body);
      const int64_t now = counts["at"].get<int64_t>();
      const int64_t windows[] = {10, 60, 3600};
      for (size_t w = 0; w < 3; ++w) {
        EXPECT_EQ(counts["windows"][w]["count"].get<uint64_t>(),
                  Truth(log, feature, now, windows[w]))
            << "step " << step << ", the " << windows[w] << " s window";
      }
    }
  }
  EXPECT_GT(replayed, 3) << "some settlements were sent twice";
  EXPECT_GT(refused, 3) << "some forged ones came first";
  EXPECT_GT(admitted, 10);
  EXPECT_GT(denied, 3) << "the trace reaches the limits";
  EXPECT_GT(late, 0) << "some settlements come after the settle margin";
  HttpReply metrics = clients[0].Get("/metrics");
  EXPECT_GT(testing::Sample(metrics.body,
                            "hourglass_settled_hits_total{direction=\"down\",event=\"tokens\"}") +
                testing::Sample(metrics.body,
                                "hourglass_settled_hits_total{direction=\"up\",event=\"tokens\"}"),
            0);
}

// Two gateways settle the same tenant's charges at once: the day's count is the sum of what was
// settled, not of what was estimated. It is read once both services have stopped: a denied
// check's take-back is sent before its 429 but answered later, and until then another service
// reading on another connection may still count the denied hit; a service that stops waits for
// every answer it is owed.
TEST_F(SettleTest, ConcurrentSettlementsOfOneFeatureLoseNothing) {
  auto a = Serve();
  auto b = Serve();
  std::atomic<uint64_t> settled{0};
  auto gateway = [&](int port, uint32_t seed) {
    HttpClient client(port);
    std::mt19937 rng(seed);
    for (int i = 0; i < 40; ++i) {
      const uint64_t estimate = 1 + rng() % 50;
      HttpReply r = client.Post(
          "/v1/check", json{{"event", "tokens"}, {"feature", "shared"}, {"cost", estimate}}.dump());
      if (r.status != 200) continue;
      const uint64_t actual = rng() % 100;
      HttpReply s = Settle(client, json::parse(r.body)["settle_token"].get<std::string>(), actual);
      settled += s.status == 200 ? actual : estimate;
    }
  };
  std::thread first(gateway, a->port(), 1);
  std::thread second(gateway, b->port(), 2);
  first.join();
  second.join();
  for (ServeProcess* serve : {a.get(), b.get()}) {
    serve->Signal(SIGTERM);
    ASSERT_EQ(serve->Wait(), 0) << serve->log();
  }
  auto reader = Serve();
  HttpClient client(reader->port());
  HttpReply c = client.Get("/v1/count?event=tokens&feature=shared&window=1h");
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(json::parse(c.body)["windows"][0]["count"].get<uint64_t>(), settled.load());
}

// Only a token this deployment signed, unaltered and in time, settles, once; nothing else changes a
// count. A settlement cannot name its own second (the old form is refused), so it can never move
// one window and not another.
TEST_F(SettleTest, BadSettlementsAreRefusedAndChangeNoCount) {
  auto serve = Serve();
  HttpClient client(serve->port());
  HttpReply p = client.Post("/v1/check", R"({"event":"plain","feature":"f","cost":2})");
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_FALSE(json::parse(p.body).contains("settle_token")) << "plain takes no settlements";
  HttpReply t = client.Post("/v1/check", R"({"event":"tokens","feature":"f","cost":2})");
  ASSERT_EQ(t.status, 200) << t.body;
  const json decision = json::parse(t.body);
  const std::string token = decision["settle_token"].get<std::string>();
  const int64_t at = decision["at"].get<int64_t>();
  // Another deployment's token (a service with its own key) for the same event and feature.
  std::ofstream(key_ + ".other") << "another key entirely, 32 bytes or more\n";
  auto other = std::make_unique<ServeProcess>(
      HOURGLASS_CLI,
      std::vector<std::string>{"--policy", policy_, "--servers", memcached_.address(),
                               "--settle-key-file", key_ + ".other"});
  ASSERT_TRUE(other->ready()) << other->log();
  HttpClient other_client(other->port());
  HttpReply foreign =
      other_client.Post("/v1/check", R"({"event":"tokens","feature":"f","cost":1})");
  ASSERT_EQ(foreign.status, 200) << foreign.body;
  const struct {
    std::string body;
    int status;
    std::string says;
  } cases[] = {
      {json{{"token", Altered(token, 3)}, {"actual", 900}}.dump(), 400, "was not signed"},
      {json{{"token", json::parse(foreign.body)["settle_token"]}, {"actual", 900}}.dump(), 400,
       "was not signed by this deployment's key"},
      {json{{"token", token.substr(0, token.size() - 2)}, {"actual", 900}}.dump(), 400,
       "\"token\""},
      {json{{"token", "not a token"}, {"actual", 900}}.dump(), 400, "is not a settlement token"},
      {json{{"event", "tokens"}, {"feature", "f"}, {"at", at - 5}, {"cost", 2}, {"actual", 0}}
           .dump(),
       400, "a settlement names its decision by the check's \"settle_token\""},
      {R"({"token":"a.b"})", 400, "\"actual\" is missing"},
  };
  for (const auto& c : cases) {
    HttpReply s = client.Post("/v1/settle", c.body);
    EXPECT_EQ(s.status, c.status) << c.body << " -> " << s.body;
    EXPECT_NE(json::parse(s.body)["error"].get<std::string>().find(c.says), std::string::npos)
        << s.body;
  }
  const auto count = [&](const char* event) {
    HttpReply c = client.Get(std::string("/v1/count?event=") + event + "&feature=f&window=1h");
    return json::parse(c.body)["windows"][0]["count"].get<uint64_t>();
  };
  EXPECT_EQ(count("plain"), 2u);
  EXPECT_EQ(count("tokens"), 3u) << "the two decisions' charges, nothing settled";
  ASSERT_EQ(Settle(client, token, 5).status, 200);
  EXPECT_EQ(count("tokens"), 6u);
  HttpReply again = Settle(client, token, 0);
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(count("tokens"), 6u) << "a replay changed nothing";
  EXPECT_EQ(client.Get("/v1/settle").status, 405);
  std::remove((key_ + ".other").c_str());
}

// A token lasts --settle-within: after it, the decision keeps the cost it was charged.
TEST_F(SettleTest, AnExpiredTokenIsRefusedAndTheEstimateStays) {
  auto serve = Serve({"--settle-within", "1s"});
  HttpClient client(serve->port());
  HttpReply t = client.Post("/v1/check", R"({"event":"tokens","feature":"late","cost":7})");
  ASSERT_EQ(t.status, 200) << t.body;
  std::this_thread::sleep_for(std::chrono::milliseconds{2100});  // past at + 1 s, whatever `at`
  HttpReply s = Settle(client, json::parse(t.body)["settle_token"].get<std::string>(), 0);
  EXPECT_EQ(s.status, 400) << s.body;
  EXPECT_NE(s.body.find("expired at"), std::string::npos) << s.body;
  HttpReply c = client.Get("/v1/count?event=tokens&feature=late&window=1h");
  EXPECT_EQ(json::parse(c.body)["windows"][0]["count"].get<uint64_t>(), 7u);
  ServeProcess refused(HOURGLASS_CLI, {"--policy", policy_, "--servers", memcached_.address(),
                                       "--settle-within", "2d"});
  EXPECT_FALSE(refused.ready());
  EXPECT_EQ(refused.Wait(), 2) << refused.log();
  EXPECT_NE(
      refused.log().find("--settle-within \"2d\": expected a duration from 1s to --retention"),
      std::string::npos)
      << refused.log();
}

}  // namespace
}  // namespace hourglass
