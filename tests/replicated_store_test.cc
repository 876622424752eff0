// ReplicatedStore against real memcached servers: two copies of every count on three servers.
// One server restarted, flushed or killed loses no count: every feature at its limit before the
// fault stays denied after it, through another process's store, with no error and no
// over-admission; counts stay exact.
#include "hourglass/replicated_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "hourglass/engine.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

using testing::MemcachedServer;

enum class Fault { kRestart, kFlush, kKill };

std::string FaultName(Fault fault) {
  switch (fault) {
    case Fault::kRestart:
      return "restart";
    case Fault::kFlush:
      return "flush";
    case Fault::kKill:
      return "kill";
  }
  return "?";
}

class ReplicatedFaultTest : public ::testing::TestWithParam<Fault> {
 protected:
  void SetUp() override {
    for (auto& server : servers_) {
      server = std::make_unique<MemcachedServer>();
      ASSERT_TRUE(server->running()) << server->error();
    }
  }
  // A process's store: its own connections to the three servers, two copies.
  std::unique_ptr<Store> Open() const {
    MemcachedOptions options;
    options.servers.clear();
    for (const auto& server : servers_) options.servers.push_back(server->address());
    options.retry_timeout = std::chrono::seconds{0};
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    EXPECT_TRUE(store.ok());
    Result<std::unique_ptr<ReplicatedStore>> replicated =
        ReplicatedStore::Create(std::move(*store), 2);
    EXPECT_TRUE(replicated.ok());
    return std::move(*replicated);
  }
  void Apply(Fault fault) {
    MemcachedServer& victim = *servers_[0];
    switch (fault) {
      case Fault::kRestart:
        victim.Stop();
        ASSERT_TRUE(victim.Start());
        break;
      case Fault::kFlush:
        ASSERT_EQ(victim.Raw("flush_all\r\n"), "OK\r\n");
        break;
      case Fault::kKill:
        victim.Kill();
        break;
    }
  }

  std::unique_ptr<MemcachedServer> servers_[3];
};

TEST_P(ReplicatedFaultTest, OneServerLosesNoCountAndAdmitsNoMoreThanTheLimit) {
  const Policy policy{*ParseLimits("5/m, 20/d"), CountingMode::kAdmitted, FailureMode::kFailOpen};
  std::unique_ptr<Store> store_a = Open(), store_b = Open();
  const Engine a = *Engine::Create(*store_a, SystemClock::Get(), EngineOptions{});
  const Engine b = *Engine::Create(*store_b, SystemClock::Get(), EngineOptions{});
  std::vector<std::string> features;
  for (int f = 0; f < 30; ++f) features.push_back("user" + std::to_string(f));
  for (const std::string& feature : features) {
    for (int i = 0; i < 5; ++i) {
      Result<Decision> d = a.Check("signup", feature, policy);
      ASSERT_TRUE(d.ok() && d->allowed && !d->degraded) << feature;
    }
  }
  Apply(GetParam());
  int admitted = 0, degraded = 0, wrong_counts = 0;
  const std::vector<Window> windows = {policy.limits[0].window, policy.limits[1].window};
  for (const std::string& feature : features) {
    for (int i = 0; i < 3; ++i) {
      Result<Decision> d = b.Check("signup", feature, policy);
      ASSERT_TRUE(d.ok());
      admitted += d->allowed ? 1 : 0;
      degraded += d->degraded ? 1 : 0;
    }
    store_b->Flush();  // the denials' take-backs, before counting
    Result<Counts> counts = a.Count("signup", feature, windows);
    ASSERT_TRUE(counts.ok()) << counts.error().ToString();
    wrong_counts += counts->windows[0].count != 5 || counts->windows[1].count != 5;
  }
  EXPECT_EQ(admitted, 0) << "every feature was at its limit before the " << FaultName(GetParam());
  EXPECT_EQ(degraded, 0) << "the other copy answered";
  EXPECT_EQ(wrong_counts, 0);
}

INSTANTIATE_TEST_SUITE_P(Faults, ReplicatedFaultTest,
                         ::testing::Values(Fault::kRestart, Fault::kFlush, Fault::kKill),
                         [](const auto& param_info) { return FaultName(param_info.param); });

TEST(ReplicatedStore, NeedsAsManyServersAsCopies) {
  MemcachedServer server;
  ASSERT_TRUE(server.running());
  MemcachedOptions options;
  options.servers = {server.address()};
  Result<std::unique_ptr<ReplicatedStore>> store =
      ReplicatedStore::Create(*MemcachedStore::Create(options), 2);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(store.error().message().find("--replicas 2 needs at least"), std::string::npos)
      << store.error().message();
}

// Each copy of a group lives on its own server, the same ones in every process.
TEST(ReplicatedStore, CopiesOfAGroupAreOnDistinctServers) {
  MemcachedServer servers[3];
  MemcachedOptions options;
  options.servers.clear();
  for (auto& server : servers) options.servers.push_back(server.address());
  std::unique_ptr<ReplicatedStore> one =
      std::move(*ReplicatedStore::Create(*MemcachedStore::Create(options), 2));
  std::unique_ptr<ReplicatedStore> two =
      std::move(*ReplicatedStore::Create(*MemcachedStore::Create(options), 2));
  for (int g = 0; g < 50; ++g) {
    const std::string group = "hg:e:" + std::to_string(g);
    const std::vector<std::string> copies = one->ServersOf(group);
    ASSERT_EQ(copies.size(), 2u);
    EXPECT_NE(copies[0], copies[1]);
    EXPECT_EQ(copies, two->ServersOf(group));
  }
  EXPECT_TRUE(one->servers_are_copies());
}

}  // namespace
}  // namespace hourglass
