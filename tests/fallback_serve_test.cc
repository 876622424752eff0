// `hourglass serve` with on_store_failure: local, end to end: two real services share one real
// memcached that is frozen (SIGSTOP), or killed and started again empty, while real HTTP clients
// hammer both. They count each other in the store (--services auto) for their shares. While it is
// down, each service admits at most its share of each limit, so that no window admits more than its
// limit plus both shares; once it answers, the services write what they admitted back at its own
// seconds, and the store counts every admitted hit (within the hits whose outcome a timeout left
// unknown, which the services count and tell).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "api_requests.h"
#include "memcached_server.h"
#include "prometheus_sample.h"
#include "run_process.h"
#include "serve_process.h"
#include "sliding_log.h"
#include "temp_path.h"

namespace hourglass {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::CheckBody;
using testing::HttpClient;
using testing::Sample;
using testing::ServeProcess;

constexpr int kServices = 2;
constexpr int kClients = 4;
const std::vector<std::string> kFeatures = {"f0", "f1", "f2"};
// The policy's limits: 6/10s and 20/m; each service's share is half of each.
constexpr int64_t kWindows[] = {10, 60};
constexpr uint64_t kMax[] = {6, 20};

struct Answer {
  int64_t at = 0;
  bool allowed = false;
  bool recorded = false;  // its hit stays counted (admitted, or a take-back the store refused)
  bool local = false;
  int service = 0;
  int phase = 0;  // the phase of the test it was asked in
  std::string feature;
};

class FallbackServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memcached_.running()) << memcached_.error();
    std::ofstream(policy_) << "events:\n  api:\n    limits: [6/10s, 20/m]\n"
                              "    on_store_failure: local\n";
    for (int s = 0; s < kServices; ++s) {
      services_.push_back(std::make_unique<ServeProcess>(
          HOURGLASS_CLI, std::vector<std::string>{
                             "--policy", policy_, "--servers", memcached_.address(), "--services",
                             std::to_string(kServices), "--timeout-ms", "200"}));
      ASSERT_TRUE(services_.back()->ready()) << services_.back()->log();
    }
  }
  void TearDown() override { StopClients(); }

  // Clients hit both services, features at random, until StopClients.
  void StartClients() {
    for (int c = 0; c < kClients; ++c) {
      clients_.emplace_back([this, c] {
        HttpClient client(services_[c % kServices]->port());
        for (int i = 0; !stop_; ++i) {
          const std::string& feature = kFeatures[(i * 7 + c) % kFeatures.size()];
          const int phase = phase_.load();
          testing::HttpReply r = client.Post("/v1/check", CheckBody("api", feature));
          if (r.status != 200 && r.status != 429) {
            ADD_FAILURE() << "status " << r.status << ": " << r.body;
            return;
          }
          const json body = json::parse(r.body);
          std::lock_guard lock(mu_);
          answers_.push_back(Answer{body["at"].get<int64_t>(), body["allowed"].get<bool>(),
                                    body["recorded"].get<bool>(), body.value("local", false),
                                    c % kServices, phase, feature});
        }
      });
    }
  }
  void StopClients() {
    stop_ = true;
    for (std::thread& t : clients_) t.join();
    clients_.clear();
  }
  // Waits (up to 30 s) until `enough` holds of the answers so far.
  bool WaitFor(const std::function<bool(const std::vector<Answer>&)>& enough) {
    const auto deadline = steady_clock::now() + std::chrono::seconds{30};
    while (steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu_);
        if (enough(answers_)) return true;
      }
      std::this_thread::sleep_for(milliseconds{20});
    }
    return false;
  }
  static size_t CountIf(const std::vector<Answer>& answers, int phase, bool local) {
    return std::count_if(answers.begin(), answers.end(),
                         [&](const Answer& a) { return a.phase == phase && a.local == local; });
  }
  // Whether every service decided at least `n` of the answers in `phase` locally.
  static bool LocalEach(const std::vector<Answer>& answers, int phase, size_t n) {
    size_t local[kServices] = {};
    for (const Answer& a : answers) local[a.service] += a.phase == phase && a.local ? 1 : 0;
    return std::all_of(std::begin(local), std::end(local), [&](size_t l) { return l >= n; });
  }
  double Metric(int service, const std::string& series) {
    return Sample(HttpClient(services_[service]->port()).Get("/metrics").body, series);
  }
  // Waits (up to 30 s) until no service holds hits to write back.
  bool WrittenBack() {
    const auto deadline = steady_clock::now() + std::chrono::seconds{30};
    while (steady_clock::now() < deadline) {
      bool all = true;
      for (int s = 0; s < kServices; ++s)
        all = all && Metric(s, "hourglass_fallback_pending_hits") == 0;
      if (all) return true;
      std::this_thread::sleep_for(milliseconds{100});
    }
    return false;
  }
  // The store's count of `feature` over the last day, asked by the CLI.
  uint64_t StoreCount(const std::string& feature) {
    testing::ProcessResult r =
        testing::RunProcess({HOURGLASS_CLI, "--servers", memcached_.address(), "--json", "count",
                             "api", feature, "--window", "1d"});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? json::parse(r.out)["windows"][0]["count"].get<uint64_t>() : 0;
  }
  // Every window, at every second, of the admitted answers from `phase` on: within the limit
  // plus both shares; each service's local admissions within its share.
  void ExpectWithinShares(int phase) {
    std::map<std::string, testing::SlidingLog> all;
    std::map<std::pair<std::string, int>, testing::SlidingLog> local;
    int64_t first = INT64_MAX, last = 0;
    for (const Answer& a : answers_) {
      if (a.phase < phase || !a.allowed) continue;
      all[a.feature].Add(a.at);
      if (a.local) local[{a.feature, a.service}].Add(a.at);
      first = std::min(first, a.at);
      last = std::max(last, a.at);
    }
    for (int64_t t = first; t <= last; ++t) {
      for (size_t w = 0; w < 2; ++w) {
        for (const auto& [feature, log] : all) {
          ASSERT_LE(log.Window(t, kWindows[w]), kMax[w] + kServices * (kMax[w] / kServices))
              << feature << " at " << t << " in " << kWindows[w] << " s";
        }
        for (const auto& [key, log] : local) {
          ASSERT_LE(log.Window(t, kWindows[w]), kMax[w] / kServices)
              << key.first << " locally at service " << key.second << " at " << t;
        }
      }
    }
  }
  // Stops the services (a drain: every write sent is answered) and compares the store's counts
  // with the hits recorded from `phase` on (those admitted, and any whose take-back the store
  // refused), within the hits the services could not be sure of.
  void ExpectStoreCountsAdmitted(int phase) {
    double uncertain = 0;
    for (int s = 0; s < kServices; ++s) {
      uncertain += Metric(s, "hourglass_fallback_uncertain_hits_total");
      EXPECT_GT(Metric(s, "hourglass_fallback_written_back_hits_total") +
                    Metric(s, "hourglass_fallback_uncertain_hits_total"),
                0)
          << "service " << s << " wrote nothing back";
    }
    for (auto& service : services_) {
      service->Signal(SIGTERM);
      EXPECT_EQ(service->Wait(), 0) << service->log();
    }
    for (const std::string& feature : kFeatures) {
      const auto admitted =
          static_cast<double>(std::count_if(answers_.begin(), answers_.end(), [&](const Answer& a) {
            return a.phase >= phase && a.allowed && a.feature == feature;
          }));
      const auto counted = static_cast<double>(StoreCount(feature));
      EXPECT_LE(std::abs(counted - admitted), uncertain)
          << feature << ": the store counts " << counted << ", the services admitted " << admitted;
    }
  }

  testing::MemcachedServer memcached_;
  const std::string policy_ = testing::UniqueTempPath("fallback-policy.yaml");
  std::vector<std::unique_ptr<ServeProcess>> services_;
  std::vector<std::thread> clients_;
  std::atomic<bool> stop_{false};
  std::atomic<int> phase_{0};
  std::mutex mu_;
  std::vector<Answer> answers_;  // guarded by mu_ while clients run
};

// A hung server: the services decide locally within their shares while it is frozen; once it
// runs again, they write back, and it counts every admitted hit of the whole run.
TEST_F(FallbackServeTest, AFrozenStoreIsDecidedWithinTheSharesAndCountsEveryHitAfter) {
  StartClients();
  ASSERT_TRUE(WaitFor([](const auto& a) { return CountIf(a, 0, false) >= 100; }));
  ASSERT_TRUE(memcached_.Freeze());
  phase_ = 1;
  // Both services decided locally, several times each.
  ASSERT_TRUE(WaitFor([](const auto& a) { return LocalEach(a, 1, 20); }));
  memcached_.Thaw();
  phase_ = 2;
  ASSERT_TRUE(WaitFor([](const auto& a) { return CountIf(a, 2, false) >= 100; }));
  StopClients();
  ASSERT_TRUE(WrittenBack()) << services_[0]->log();
  ExpectWithinShares(0);
  ExpectStoreCountsAdmitted(0);
}

// Killed (true) or stopped.
class FallbackRestartTest : public FallbackServeTest, public ::testing::WithParamInterface<bool> {};

// A crashed (SIGKILL) or stopped (SIGTERM) server, started again empty: what was counted before is
// lost (told by the services, and decided open on what is left); the hits admitted from the crash
// on are all counted once the services have written back.
TEST_P(FallbackRestartTest, AStoreStartedAgainCountsEveryHitSinceItWentDown) {
  StartClients();
  ASSERT_TRUE(WaitFor([](const auto& a) { return CountIf(a, 0, false) >= 100; }));
  StopClients();  // nothing in flight at the crash: each hit is before or after it
  if (GetParam()) {
    memcached_.Kill();
  } else {
    memcached_.Stop();
  }
  phase_ = 1;
  stop_ = false;
  StartClients();
  // Both services decided locally, several times each (one busy with the other's clients
  // would have nothing to write back).
  ASSERT_TRUE(WaitFor([](const auto& a) { return LocalEach(a, 1, 20); }));
  ASSERT_TRUE(memcached_.Start()) << memcached_.error();
  phase_ = 2;
  ASSERT_TRUE(WaitFor([](const auto& a) { return CountIf(a, 2, false) >= 100; }));
  StopClients();
  ASSERT_TRUE(WrittenBack()) << services_[0]->log();
  EXPECT_TRUE(services_[0]->WaitForLog("decided here while the store failed"))
      << services_[0]->log();
  ExpectWithinShares(1);
  ExpectStoreCountsAdmitted(1);
}

INSTANTIATE_TEST_SUITE_P(Down, FallbackRestartTest, ::testing::Bool(),
                         [](const auto& param) { return param.param ? "Killed" : "Stopped"; });

}  // namespace
}  // namespace hourglass
