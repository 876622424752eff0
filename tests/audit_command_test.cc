// `hourglass serve --audit-log` and `hourglass audit`, end to end: two real services on one real
// Redis write their decisions while clients race for the same features, and the real CLI finds
// every decision exact; a log holding a wrong decision exits 1, a bad line exits 2 naming it.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "api_requests.h"
#include "hourglass/audit_record.h"
#include "redis_server.h"
#include "run_process.h"
#include "serve_process.h"
#include "temp_path.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::CheckBody;
using testing::HttpClient;
using testing::RunProcess;
using testing::ServeProcess;
using testing::UniqueTempPath;

TEST(AuditCommand, TwoServicesDecisionsAreAllExact) {
  testing::RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.error();
  const std::string policy = UniqueTempPath("audit-policy.yaml");
  std::ofstream(policy) << "events:\n  signup:\n    limits: [2/s, 5/m, 20/h]\n";
  const std::string logs[] = {UniqueTempPath("audit-a.log"), UniqueTempPath("audit-b.log")};
  std::vector<std::unique_ptr<ServeProcess>> services;
  for (const std::string& log : logs) {
    std::remove(log.c_str());
    services.push_back(std::make_unique<ServeProcess>(
        HOURGLASS_CLI, std::vector<std::string>{"--policy", policy, "--store", "redis", "--servers",
                                                redis.address(), "--audit-log", log}));
    ASSERT_TRUE(services.back()->ready()) << services.back()->log();
  }
  std::atomic<int> answered{0}, admitted{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      HttpClient client(services[c % 2]->port());
      for (int i = 0; i < 40; ++i) {
        const int status =
            client.Post("/v1/check", CheckBody("signup", "user-" + std::to_string(i % 3))).status;
        answered += status == 200 || status == 429;
        admitted += status == 200;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(answered.load(), 240);
  for (auto& service : services) {
    service->Signal(SIGTERM);
    EXPECT_EQ(service->Wait(), 0) << service->log();
  }
  testing::ProcessResult audit = RunProcess({HOURGLASS_CLI, "--json", "audit", logs[0], logs[1]});
  ASSERT_EQ(audit.code, 0) << audit.out << audit.err;
  const json report = json::parse(audit.out);
  EXPECT_EQ(report["decisions"], 240);
  EXPECT_EQ(report["features"], 3);
  EXPECT_EQ(report["total"]["admitted"], admitted.load());
  EXPECT_GT(report["total"]["denied"].get<int>(), 100);
  EXPECT_EQ(report["total"]["over_admissions"], 0);
  EXPECT_EQ(report["total"]["needless_denials"], 0);
  EXPECT_EQ(report["total"]["count_errors"], 0);
  testing::ProcessResult text = RunProcess({HOURGLASS_CLI, "audit", logs[0], logs[1]});
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("no errors"), std::string::npos) << text.out;
}

TEST(AuditCommand, AWrongDecisionExitsOneAndABadLineTwo) {
  const std::string path = UniqueTempPath("audit-wrong.log");
  AuditRecord r;
  r.at = 1'795'737'600;
  r.event = "signup";
  r.feature = "ann";
  r.limits = {AuditLimit{Limit{*Window::Sliding(Seconds{60}), 1}, true, 1, 1, true}};
  r.allowed = r.request_allowed = r.recorded = true;
  {
    std::ofstream out(path);
    out << AuditLine(r) << "\n";
    ++r.at;  // a second admission within the minute under 1/m
    r.limits[0].count = 2;
    r.limits[0].count_min = 2;
    out << AuditLine(r) << "\n";
  }
  testing::ProcessResult wrong = RunProcess({HOURGLASS_CLI, "audit", path});
  EXPECT_EQ(wrong.code, 1) << wrong.out << wrong.err;
  EXPECT_NE(wrong.out.find("1 errors"), std::string::npos) << wrong.out;
  std::ofstream(path, std::ios::app) << "{\"at\": 1}\n";
  testing::ProcessResult bad = RunProcess({HOURGLASS_CLI, "audit", path});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find(path + ":3: not an audit line"), std::string::npos) << bad.err;
  EXPECT_EQ(RunProcess({HOURGLASS_CLI, "audit", path + ".missing"}).code, 2);
}

}  // namespace
}  // namespace hourglass
