// A scale-out without lost counts: features recorded on servers {A, B}, then read and checked
// through {A, B, C} in transition from {A, B} (TransitionStore), with real memcached servers.
// Moved features keep their counts and their denials; a reset clears both servers; processes
// with the two lists swapped (a rolling restart) never admit more than the limit together; a
// previous server that is gone reads as empty instead of failing checks.
#include "hourglass/transition_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/key_codec.h"
#include "hourglass/memcached_store.h"
#include "hourglass/replicated_store.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

using testing::MemcachedServer;

std::unique_ptr<MemcachedStore> On(std::vector<std::string> servers) {
  Result<std::unique_ptr<MemcachedStore>> store =
      MemcachedStore::Create(MemcachedOptions{.servers = std::move(servers)});
  EXPECT_TRUE(store.ok()) << store.error().ToString();
  return std::move(*store);
}

// Two copies of every count on `servers`.
std::unique_ptr<Store> CopiesOn(std::vector<std::string> servers) {
  Result<std::unique_ptr<ReplicatedStore>> store =
      ReplicatedStore::Create(On(std::move(servers)), 2);
  EXPECT_TRUE(store.ok()) << store.error().ToString();
  return std::move(*store);
}

class TransitionStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (MemcachedServer* s : {&a_, &b_, &c_}) ASSERT_TRUE(s->running()) << s->error();
  }
  std::vector<std::string> Old() const { return {a_.address(), b_.address()}; }
  std::vector<std::string> New() const { return {a_.address(), b_.address(), c_.address()}; }
  std::unique_ptr<TransitionStore> Transition(std::vector<std::string> now,
                                              std::vector<std::string> before) const {
    return std::make_unique<TransitionStore>(On(std::move(now)), On(std::move(before)));
  }
  static uint64_t DayCount(const Engine& engine, const std::string& feature) {
    const Window day = *Window::Sliding(Seconds{86400});
    Result<Counts> counts = engine.Count("signup", feature, {&day, 1});
    EXPECT_TRUE(counts.ok()) << counts.error().ToString();
    return counts.ok() ? counts->windows[0].count : ~0ull;
  }
  // A feature whose keys the two lists put on different servers.
  std::string MovedFeature(TransitionStore& store, const std::string& prefix) const {
    const KeyCodec codec = *KeyCodec::Create("hg");
    for (int i = 0;; ++i) {
      const std::string feature = prefix + std::to_string(i);
      if (store.Moved(codec.GroupKey("signup", feature))) return feature;
    }
  }

  MemcachedServer a_, b_, c_;
  SystemClock clock_;
};

TEST_F(TransitionStoreTest, MovedFeaturesKeepTheirCountsAndTheirDenials) {
  std::unique_ptr<MemcachedStore> old_store = On(Old());
  const Engine before = *Engine::Create(*old_store, clock_, EngineOptions{});
  const Policy policy{*ParseLimits("3/h"), CountingMode::kAttempts, FailureMode::kFailOpen};
  std::mt19937 rng(3);
  std::map<std::string, uint64_t> truth;
  for (int i = 0; i < 120; ++i) {
    const std::string feature = "user" + std::to_string(i);
    const uint64_t cost = 1 + rng() % 4;  // some at or over 3/h, some under
    ASSERT_TRUE(before.Record("signup", feature, cost).ok());
    truth[feature] = cost;
  }

  // The new list alone: the features whose server changed start again from zero.
  std::unique_ptr<MemcachedStore> new_store = On(New());
  const Engine alone = *Engine::Create(*new_store, clock_, EngineOptions{});
  int lost = 0;
  for (const auto& [feature, count] : truth) lost += DayCount(alone, feature) == 0;
  EXPECT_GT(lost, 10) << "about a third of the features move to the new server";

  // In transition: every count kept, every feature at its limit still denied.
  std::unique_ptr<TransitionStore> store = Transition(New(), Old());
  const Engine during = *Engine::Create(*store, clock_, EngineOptions{});
  int moved = 0;
  const KeyCodec codec = *KeyCodec::Create("hg");
  for (const auto& [feature, count] : truth) {
    moved += store->Moved(codec.GroupKey("signup", feature));
    EXPECT_EQ(DayCount(during, feature), count) << feature;
    Result<Decision> d = during.Check("signup", feature, policy);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    EXPECT_EQ(d->allowed, count < 3) << feature << " had " << count;
    truth[feature] += 1;  // attempts mode: the check counts, on the new server
  }
  EXPECT_EQ(moved, lost);
  for (const auto& [feature, count] : truth) EXPECT_EQ(DayCount(during, feature), count);
  EXPECT_NE(store->Describe().find("previous memcached"), std::string::npos) << store->Describe();

  // A reset clears the feature on both servers.
  const std::string feature = MovedFeature(*store, "user");
  ASSERT_TRUE(during.Reset("signup", feature).ok());
  EXPECT_EQ(DayCount(during, feature), 0u);
  EXPECT_EQ(DayCount(before, feature), 0u) << "the previous server was cleared too";
}

TEST_F(TransitionStoreTest, SwappedListsSideBySideNeverAdmitMoreThanTheLimit) {
  // A rolling restart: some processes write the old list and read the new (step 1), the others
  // write the new and read the old (step 2); each checks the same hot feature.
  std::unique_ptr<TransitionStore> step1 = Transition(Old(), New());
  std::unique_ptr<TransitionStore> step2 = Transition(New(), Old());
  const std::string feature = MovedFeature(*step2, "hot");
  const Engine one = *Engine::Create(*step1, clock_, EngineOptions{});
  const Engine two = *Engine::Create(*step2, clock_, EngineOptions{});
  const Policy policy{*ParseLimits("20/h"), CountingMode::kAdmitted, FailureMode::kFailClosed};
  std::atomic<int> admitted{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const Engine& engine = t % 2 == 0 ? one : two;
      for (int i = 0; i < 25; ++i) {
        Result<Decision> d = engine.Check("signup", feature, policy);
        if (!d.ok() || d->degraded) ++failed;
        if (d.ok() && d->allowed && !d->degraded) ++admitted;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // The denials' take-backs went out fire-and-forget, each on its own process's connections:
  // applied before the counts are read on the other's.
  EXPECT_EQ(step1->Flush(), 0u);
  EXPECT_EQ(step2->Flush(), 0u);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_LE(admitted.load(), 20);
  EXPECT_GE(admitted.load(), 1);
  EXPECT_EQ(DayCount(two, feature), static_cast<uint64_t>(admitted.load()))
      << "every admitted hit is counted once, on one of the two servers";
}

TEST_F(TransitionStoreTest, AReplacedServerThatIsGoneReadsAsEmptyAndChecksGoOn) {
  // B replaced by C: {A, C} in transition from {A, B}.
  std::unique_ptr<MemcachedStore> old_store = On(Old());
  const Engine before = *Engine::Create(*old_store, clock_, EngineOptions{});
  std::unique_ptr<TransitionStore> store = Transition({a_.address(), c_.address()}, Old());
  // A feature that lived on B (a ring change can also move features that lived on A).
  const KeyCodec codec = *KeyCodec::Create("hg");
  std::string feature;
  for (int i = 0; feature.empty(); ++i) {
    const std::string candidate = "user" + std::to_string(i);
    const std::string group = codec.GroupKey("signup", candidate);
    if (store->Moved(group) && *old_store->ServerFor(group) == b_.address()) feature = candidate;
  }
  ASSERT_TRUE(before.Record("signup", feature, 2).ok());
  const Engine during = *Engine::Create(*store, clock_, EngineOptions{});
  EXPECT_EQ(DayCount(during, feature), 2u) << "read on B while it lives";
  b_.Kill();
  const Policy policy{*ParseLimits("3/h"), CountingMode::kAdmitted, FailureMode::kFailClosed};
  Result<Decision> d = during.Check("signup", feature, policy);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_FALSE(d->degraded) << "the current server answered";
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(DayCount(during, feature), 1u) << "B's hits are gone with B";
}

TEST_F(TransitionStoreTest, WithCopiesAScaleOutKeepsEveryCountAndSurvivesALostServer) {
  // Two copies on {A, B, C}, then on {A, B, C, D} in transition from them.
  MemcachedServer d;
  ASSERT_TRUE(d.running()) << d.error();
  const std::vector<std::string> old_list = New();
  std::vector<std::string> new_list = New();
  new_list.push_back(d.address());
  std::unique_ptr<Store> old_store = CopiesOn(old_list);
  const Engine before = *Engine::Create(*old_store, clock_, EngineOptions{});
  std::map<std::string, uint64_t> truth;
  for (int i = 0; i < 120; ++i) {
    const std::string feature = "user" + std::to_string(i);
    ASSERT_TRUE(before.Record("signup", feature, 1 + i % 4).ok());
    truth[feature] = 1 + i % 4;
  }
  TransitionStore store(On(new_list), On(old_list), 2, 2);
  EXPECT_TRUE(store.servers_are_copies());
  const Engine during = *Engine::Create(store, clock_, EngineOptions{});
  const KeyCodec codec = *KeyCodec::Create("hg");
  int moved = 0, shared = 0;
  for (const auto& [feature, count] : truth) {
    const std::string group = codec.GroupKey("signup", feature);
    (store.Moved(group) ? moved : shared) += 1;
    EXPECT_EQ(DayCount(during, feature), count) << feature << (store.Moved(group) ? " moved" : "");
    EXPECT_EQ(store.ServersOf(group).size(), 2u) << "a group's copies: the current ones";
  }
  EXPECT_GT(moved, 0) << "some features have both copies on other servers now";
  EXPECT_GT(shared, 0) << "the others keep a server: it holds every count";

  // One old server lost: every count is still read, from the copy that kept it.
  const Policy policy{*ParseLimits("3/h"), CountingMode::kAttempts, FailureMode::kFailClosed};
  a_.Stop();
  ASSERT_TRUE(a_.Start());
  int denied = 0;
  for (auto& [feature, count] : truth) {
    Result<Decision> decision = during.Check("signup", feature, policy);
    ASSERT_TRUE(decision.ok()) << decision.error().ToString();
    EXPECT_FALSE(decision->degraded) << feature;
    EXPECT_EQ(decision->allowed, count < 3) << feature << " had " << count;
    denied += !decision->allowed;
    count += 1;
    EXPECT_EQ(DayCount(during, feature), count) << feature;
  }
  EXPECT_EQ(denied, 60) << "every feature at its limit stays denied";
}

}  // namespace
}  // namespace hourglass
