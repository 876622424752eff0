// POST /v1/settle as a token-budget gateway uses it: check with an estimated cost, settle the true
// cost once the response is known, upward or downward, at the decision's instant. Two real
// `hourglass serve` processes share a real memcached (each with its hot-path caches); every count
// and every decision is held against a brute-force log of what was settled.
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
  }
  // A service with a 1 s settle margin: a settlement 2 s after its decision writes into buckets
  // every service caches as final.
  std::unique_ptr<ServeProcess> Serve() {
    auto serve = std::make_unique<ServeProcess>(
        HOURGLASS_CLI, std::vector<std::string>{"--policy", policy_, "--servers",
                                                memcached_.address(), "--settle-margin", "1s"});
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }
  static HttpReply Settle(HttpClient& client, const std::string& event, const std::string& feature,
                          int64_t at, uint64_t cost, uint64_t actual) {
    return client.Post(
        "/v1/settle",
        json{{"event", event}, {"feature", feature}, {"at", at}, {"cost", cost}, {"actual", actual}}
            .dump());
  }

  testing::MemcachedServer memcached_;
  std::string policy_;
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
  int admitted = 0, denied = 0, late = 0;
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
    if (rng() % 10 < 3) continue;  // the estimate was right
    if (rng() % 8 == 0) {          // a slow response: settled after the settle margin
      ++late;
      std::this_thread::sleep_for(std::chrono::milliseconds{2100});
    }
    const uint64_t actual = rng() % 800;
    HttpReply s = Settle(clients[rng() % 2], "tokens", feature, at, estimate, actual);
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(json::parse(s.body)["delta"].get<int64_t>(),
              static_cast<int64_t>(actual) - static_cast<int64_t>(estimate));
    log.back().hits = actual;
    for (HttpClient& reader : clients) {
      HttpReply c = reader.Get("/v1/count?event=tokens&feature=" + UrlEncode(feature) +
                               "&window=1m&window=1h");
      ASSERT_EQ(c.status, 200) << c.body;
      const json counts = json::parse(c.body);
      const int64_t now = counts["at"].get<int64_t>();
      EXPECT_EQ(counts["windows"][0]["count"].get<uint64_t>(), Truth(log, feature, now, 60))
          << "step " << step;
      EXPECT_EQ(counts["windows"][1]["count"].get<uint64_t>(), Truth(log, feature, now, 3600))
          << "step " << step;
    }
  }
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
      HttpReply s = Settle(client, "tokens", "shared", json::parse(r.body)["at"].get<int64_t>(),
                           estimate, actual);
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

TEST_F(SettleTest, BadSettlementsAreRefusedAndChangeNoCount) {
  auto serve = Serve();
  HttpClient client(serve->port());
  HttpReply r = client.Post("/v1/check", R"({"event":"plain","feature":"f","cost":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  const int64_t at = json::parse(r.body)["at"].get<int64_t>();
  HttpReply t = client.Post("/v1/check", R"({"event":"tokens","feature":"f","cost":2})");
  ASSERT_EQ(t.status, 200) << t.body;
  const struct {
    std::string event;
    int64_t at;
    int status;
    std::string says;
  } cases[] = {
      {"plain", at, 400, "event \"plain\" takes no settlements: its policy needs settle: true"},
      {"nope", at, 404, "unknown event \"nope\""},
      {"tokens", at + 3600, 400, "\"at\" " + std::to_string(at + 3600) + " is not the instant"},
      {"tokens", at - 86400, 400, "must lie within the last 1d"},
  };
  for (const auto& c : cases) {
    HttpReply s = Settle(client, c.event, "f", c.at, 2, 900);
    EXPECT_EQ(s.status, c.status) << s.body;
    EXPECT_NE(json::parse(s.body)["error"].get<std::string>().find(c.says), std::string::npos)
        << s.body;
  }
  // A decision of a service whose clock runs a second ahead (within the settle margin) settles.
  EXPECT_EQ(Settle(client, "tokens", "f", at + 1, 2, 2).status, 200);
  HttpReply bad = client.Post("/v1/settle", R"({"event":"tokens","feature":"f","at":1})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(json::parse(bad.body)["error"].get<std::string>().find("\"cost\" is missing"),
            std::string::npos)
      << bad.body;
  for (const char* event : {"plain", "tokens"}) {
    HttpReply c = client.Get(std::string("/v1/count?event=") + event + "&feature=f&window=1h");
    EXPECT_EQ(json::parse(c.body)["windows"][0]["count"].get<uint64_t>(), 2u) << event;
  }
  EXPECT_EQ(client.Get("/v1/settle").status, 405);
}

}  // namespace
}  // namespace hourglass
