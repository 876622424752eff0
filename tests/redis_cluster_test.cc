// RedisStore on a real Redis Cluster of three masters: a feature's keys share one slot, and the
// store follows the cluster while an operator reshards it (MOVED once a slot has moved, ASK while
// it migrates, TRYAGAIN while its keys are split), for checks and for fire-and-forget writes
// alike, without losing or doubling a count; a node that dies fails only its own slots.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/redis_store.h"
#include "redis_server.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kNow = 1'431'859'850;

class RedisClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.ready()) << cluster_.error();
    RedisOptions options;
    options.cluster = true;
    options.servers = {cluster_.node(0).address()};  // one seed: the rest is learnt
    options.io_timeout = milliseconds{2000};
    options.connect_timeout = milliseconds{2000};
    store_ = std::move(*RedisStore::Create(options));
    engine_.emplace(*Engine::Create(*store_, clock_, EngineOptions{}));
  }
  // The node index serving `group` as the cluster says.
  int NodeOf(const std::string& group) {
    return cluster_.OwnerOf(cluster_.KeySlot("{" + group + "}"));
  }
  uint64_t DayCount(const std::string& feature) {
    const Window day = *Window::Sliding(Seconds{86400});
    Result<Counts> counts = engine_->Count("signup", feature, {&day, 1});
    EXPECT_TRUE(counts.ok()) << counts.error().ToString();
    return counts.ok() ? counts->windows[0].count : 0;
  }
  size_t IndexOf(const std::string& address) {
    for (size_t i = 0; i < cluster_.size(); ++i) {
      if (cluster_.node(i).address() == address) return i;
    }
    return cluster_.size();
  }

  testing::RedisCluster cluster_;
  std::unique_ptr<RedisStore> store_;
  ManualClock clock_{FromUnix(kNow)};
  std::optional<Engine> engine_;
};

TEST_F(RedisClusterTest, AFeaturesKeysShareOneSlotOnTheNodeTheStoreTalksTo) {
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d"), CountingMode::kAdmitted,
                      FailureMode::kFailClosed};
  std::set<int> nodes;
  for (int f = 0; f < 15; ++f) {
    const std::string feature = "user" + std::to_string(f);
    for (int i = 0; i < 3; ++i) {
      Result<Decision> d = engine_->Check("signup", feature, policy);
      ASSERT_TRUE(d.ok() && !d->degraded) << (d.ok() ? d->store_error->ToString() : "");
    }
    const std::string group = "hg:signup:" + feature;
    const int node = NodeOf(group);
    nodes.insert(node);
    EXPECT_EQ(IndexOf(*store_->ServerFor(group)), static_cast<size_t>(node)) << group;
    // Every key of the feature is on that node (packs, ledgers): none on the others.
    for (size_t n = 0; n < cluster_.size(); ++n) {
      const std::string keys = cluster_.node(n).Command({"KEYS", "{" + group + "}*"});
      EXPECT_EQ(keys.empty(), static_cast<int>(n) != node) << group << " on node " << n;
    }
  }
  EXPECT_EQ(nodes.size(), 3u) << "fifteen features spread over the three masters";
}

TEST_F(RedisClusterTest, ASlotMovedByAnOperatorIsFollowedAndItsCountsMoveWithIt) {
  const Policy policy{*ParseLimits("100/d"), CountingMode::kAdmitted, FailureMode::kFailClosed};
  const std::string group = "hg:signup:ann";
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(engine_->Check("signup", "ann", policy)->allowed);
  const int from = NodeOf(group);
  const size_t to = static_cast<size_t>((from + 1) % 3);
  ASSERT_TRUE(cluster_.MoveSlot(cluster_.KeySlot("{" + group + "}"), to));
  // The store still sends to the old node, which answers MOVED: followed, and learnt.
  EXPECT_EQ(DayCount("ann"), 10u);
  EXPECT_EQ(IndexOf(*store_->ServerFor(group)), to);
  Result<Decision> d = engine_->Check("signup", "ann", policy);
  ASSERT_TRUE(d.ok() && !d->degraded && d->allowed);
  EXPECT_EQ(d->limits[0].count, 11u);
  EXPECT_EQ(d->cost.round_trips, 1u) << "the new node is known now";
}

// While the slot migrates (IMPORTING on the target, MIGRATING on the source, its keys moved), the
// source sends clients to the target with ASK: a batch over keys that moved goes on there at
// once. A check also reads keys that do not exist yet (the open second's pack, the generation),
// which the target cannot tell apart from keys still on the source: it answers TRYAGAIN until
// the migration ends, and the check waits for that within io_timeout.
TEST_F(RedisClusterTest, AMigratingSlotIsFollowedWithAskAndChecksWaitForItsEnd) {
  const Policy policy{*ParseLimits("100/d"), CountingMode::kAdmitted, FailureMode::kFailClosed};
  const std::string group = "hg:signup:bob";
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(engine_->Check("signup", "bob", policy)->allowed);
  ASSERT_TRUE(store_->Apply(Batch{group, {{group + ":k", 5, Seconds{600}}}, {}}).ok());
  const int slot = cluster_.KeySlot("{" + group + "}");
  const int from = NodeOf(group);
  const size_t to = static_cast<size_t>((from + 2) % 3);
  ASSERT_TRUE(cluster_.MoveSlot(slot, to, /*finish=*/false));
  Result<std::vector<uint64_t>> moved =
      store_->Apply(Batch{group, {{group + ":k", 1, Seconds{600}}}, {group + ":k"}});
  ASSERT_TRUE(moved.ok()) << moved.error().ToString();
  EXPECT_EQ(*moved, (std::vector<uint64_t>{6}));
  EXPECT_EQ(IndexOf(*store_->ServerFor(group)), static_cast<size_t>(from))
      << "ASK is for one command: the slot map is unchanged";
  std::thread finisher([&] {
    std::this_thread::sleep_for(milliseconds{300});
    (void)cluster_.Finish(slot, to);
  });
  Result<Decision> d = engine_->Check("signup", "bob", policy);
  finisher.join();
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  ASSERT_FALSE(d->degraded) << d->store_error->ToString();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->limits[0].count, 5u);
  EXPECT_EQ(DayCount("bob"), 5u);
  ASSERT_TRUE(engine_->Reset("signup", "bob").ok());
  EXPECT_EQ(DayCount("bob"), 0u);
}

// A migration that has moved some of a slot's keys and not others makes a batch over both answer
// TRYAGAIN: the store tries again until the migration ends, within io_timeout.
TEST_F(RedisClusterTest, ABatchOverKeysSplitByAMigrationIsTriedAgainUntilItEnds) {
  const std::string group = "hg:signup:carol";
  const std::string a = group + ":x", b = group + ":y";
  ASSERT_TRUE(store_->Apply(Batch{group, {{a, 1, Seconds{600}}, {b, 1, Seconds{600}}}, {}}).ok());
  const int slot = cluster_.KeySlot("{" + group + "}");
  const int from = NodeOf(group);
  const size_t to = static_cast<size_t>((from + 1) % 3);
  testing::RedisServer& source = cluster_.node(static_cast<size_t>(from));
  testing::RedisServer& target = cluster_.node(to);
  const std::string s = std::to_string(slot);
  ASSERT_EQ(
      target.Command({"CLUSTER", "SETSLOT", s, "IMPORTING", source.Command({"CLUSTER", "MYID"})}),
      "OK");
  ASSERT_EQ(
      source.Command({"CLUSTER", "SETSLOT", s, "MIGRATING", target.Command({"CLUSTER", "MYID"})}),
      "OK");
  ASSERT_EQ(source.Command({"MIGRATE", "127.0.0.1", std::to_string(target.port()), "", "0", "5000",
                            "KEYS", "{" + group + "}:x"}),
            "OK");
  std::thread finisher([&] {
    std::this_thread::sleep_for(milliseconds{300});
    (void)cluster_.MoveSlot(slot, to);  // the rest of the keys, then the slot
  });
  Result<std::vector<uint64_t>> values =
      store_->Apply(Batch{group, {{a, 1, Seconds{600}}, {b, 1, Seconds{600}}}, {a, b}});
  finisher.join();
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{2, 2}));
}

// A migration ended on the source before the target (each names the other: the source sends
// clients on with MOVED, the importing target sends them back) is followed until the target
// learns it owns the slot, within io_timeout: the ping-pong is not an error.
TEST_F(RedisClusterTest, TwoNodesThatSendAClientToEachOtherAreAskedAgainUntilTheyAgree) {
  const std::string group = "hg:signup:erin";
  const std::string key = group + ":k";
  ASSERT_TRUE(store_->Apply(Batch{group, {{key, 3, Seconds{600}}}, {}}).ok());
  const int slot = cluster_.KeySlot("{" + group + "}");
  const int from = NodeOf(group);
  const size_t to = static_cast<size_t>((from + 1) % 3);
  testing::RedisServer& source = cluster_.node(static_cast<size_t>(from));
  testing::RedisServer& target = cluster_.node(to);
  ASSERT_TRUE(cluster_.MoveSlot(slot, to, /*finish=*/false));
  const std::string s = std::to_string(slot);
  ASSERT_EQ(source.Command({"CLUSTER", "SETSLOT", s, "NODE", cluster_.NodeId(to)}), "OK");
  ASSERT_EQ(source.Command({"GET", "{" + group + "}:k"}).rfind("MOVED", 0), 0u);
  ASSERT_EQ(target.Command({"GET", "{" + group + "}:k"}).rfind("MOVED", 0), 0u)
      << "the importing target sends the client back";
  std::thread finisher([&] {
    std::this_thread::sleep_for(milliseconds{300});
    (void)cluster_.Finish(slot, to);
  });
  Result<std::vector<uint64_t>> value =
      store_->Apply(Batch{group, {{key, 1, Seconds{600}}}, {key}});
  finisher.join();
  ASSERT_TRUE(value.ok()) << value.error().ToString();
  EXPECT_EQ(*value, (std::vector<uint64_t>{4}));
  EXPECT_EQ(IndexOf(*store_->ServerFor(group)), to);
}

// Fire-and-forget writes (take-backs) sent to a node that no longer serves their slot are sent
// again where it lives: nothing is lost.
TEST_F(RedisClusterTest, FireAndForgetWritesFollowARedirect) {
  const std::string group = "hg:signup:dave";
  const std::string key = group + ":k";
  ASSERT_TRUE(store_->Apply(Batch{group, {{key, 50, Seconds{600}}}, {}}).ok());
  const int from = NodeOf(group);
  ASSERT_TRUE(cluster_.MoveSlot(cluster_.KeySlot("{" + group + "}"), (from + 1) % 3));
  std::vector<Batch> takebacks(10, Batch{group, {{key, -1, Seconds{600}}}, {}});
  for (const Status& s : store_->Send(takebacks)) ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(store_->Flush(), 0u) << "every redirected write was sent again and applied";
  Result<std::vector<uint64_t>> value = store_->Apply(Batch{group, {}, {key}});
  ASSERT_TRUE(value.ok()) << value.error().ToString();
  EXPECT_EQ(*value, (std::vector<uint64_t>{40}));
}

TEST_F(RedisClusterTest, ADeadNodeFailsOnlyTheFeaturesItServed) {
  const Policy policy{*ParseLimits("100/d"), CountingMode::kAdmitted, FailureMode::kFailClosed};
  std::map<std::string, int> node_of;
  for (int f = 0; f < 24; ++f) {
    const std::string feature = "eve" + std::to_string(f);
    ASSERT_TRUE(engine_->Check("signup", feature, policy)->allowed);
    node_of[feature] = NodeOf("hg:signup:" + feature);
  }
  cluster_.node(2).Kill();
  int failed = 0, served = 0;
  for (const auto& [feature, node] : node_of) {
    Result<Decision> d = engine_->Check("signup", feature, policy);
    ASSERT_TRUE(d.ok());
    if (node == 2) {
      EXPECT_TRUE(d->degraded) << feature;
      EXPECT_FALSE(d->allowed) << "fail closed";
      ++failed;
    } else {
      EXPECT_FALSE(d->degraded) << feature << ": " << d->store_error->ToString();
      EXPECT_EQ(d->limits[0].count, 2u);
      ++served;
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(served, 0);
}

}  // namespace
}  // namespace hourglass
