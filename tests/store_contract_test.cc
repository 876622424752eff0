// The Store contract, run against both stores: the in-memory one and a real memcached.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "hourglass/store.h"
#include "store_harness.h"

namespace hourglass {
namespace {

using testing::MakeHarness;
using testing::StoreHarness;

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    harness_ = MakeHarness(GetParam());
    ASSERT_FALSE(::testing::Test::HasFailure());
  }
  Store& store() { return harness_->store(); }
  // A group and keys unique to this test, so cases never see each other's data.
  std::string Key(const std::string& suffix) const { return group_ + ":" + suffix; }
  std::vector<uint64_t> Read(std::vector<std::string> keys) {
    Result<std::vector<uint64_t>> values = store().Apply(Batch{group_, {}, std::move(keys)});
    EXPECT_TRUE(values.ok()) << values.error().ToString();
    return values.ok() ? *values : std::vector<uint64_t>{};
  }

  std::unique_ptr<StoreHarness> harness_;
  std::string group_ =
      std::string("t:") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
};

TEST_P(StoreContract, MissingKeysReadZero) {
  EXPECT_EQ(Read({Key("a"), Key("b")}), (std::vector<uint64_t>{0, 0}));
}

TEST_P(StoreContract, ReadsInTheSameBatchSeeTheIncrements) {
  const Seconds ttl{60};
  Result<std::vector<uint64_t>> values = store().Apply(
      Batch{group_, {{Key("a"), 3, ttl}, {Key("b"), 1, ttl}}, {Key("b"), Key("a"), Key("c")}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{1, 3, 0}));
  values = store().Apply(Batch{group_, {{Key("a"), 2, ttl}}, {Key("a")}});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<uint64_t>{5}));
}

TEST_P(StoreContract, NegativeDeltasFloorAtZeroAndDoNotCreate) {
  const Seconds ttl{60};
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 2, ttl}}, {}}).ok());
  Result<std::vector<uint64_t>> values = store().Apply(
      Batch{group_, {{Key("a"), -5, ttl}, {Key("new"), -1, ttl}}, {Key("a"), Key("new")}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{0, 0}));
  // Both can count up again.
  values = store().Apply(
      Batch{group_, {{Key("a"), 1, ttl}, {Key("new"), 1, ttl}}, {Key("a"), Key("new")}});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<uint64_t>{1, 1}));
}

TEST_P(StoreContract, BatchWithoutReadsIsAppliedBeforeTheNextBatch) {
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 7, Seconds{60}}}, {}}).ok());
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{7}));
}

TEST_P(StoreContract, ManyBatchesWithoutReadsAreAllApplied) {
  // More fire-and-forget batches in a row than a connection lets go unanswered.
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 1, Seconds{60}}}, {}}).ok());
  }
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{200}));
}

TEST_P(StoreContract, TtlIsSetAtCreationAndNotExtended) {
  // memcached's clock ticks in whole seconds, so a TTL of 3 s lives 2 to 3 s: a second later (and
  // a loaded machine's slack) the key is alive, 4 s after creation it is gone.
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 1, Seconds{3}}}, {}}).ok());
  harness_->Advance(Seconds{1});
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 1, Seconds{100}}}, {}}).ok());
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{2}));
  harness_->Advance(Seconds{3});
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{0})) << "expired 3s after creation";
  // Expired keys are created afresh.
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 4, Seconds{100}}}, {}}).ok());
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{4}));
}

TEST_P(StoreContract, TtlsLongerThanThirtyDaysWork) {
  // memcached reads expirations over 30 days as Unix times: the store must convert them.
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 1, Seconds{40 * 86400}}}, {}}).ok());
  harness_->Advance(Seconds{1});
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{1}));
}

TEST_P(StoreContract, DeleteRemovesKeysAndToleratesMissingOnes) {
  ASSERT_TRUE(
      store()
          .Apply(Batch{group_, {{Key("a"), 1, Seconds{60}}, {Key("b"), 1, Seconds{60}}}, {}})
          .ok());
  const std::vector<std::string> doomed = {Key("a"), Key("missing")};
  Status s = store().Delete(group_, doomed);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(Read({Key("a"), Key("b")}), (std::vector<uint64_t>{0, 1}));
}

TEST_P(StoreContract, MalformedKeysAreRejectedAndNothingIsApplied) {
  for (const std::string& bad : {Key("a b"), Key("x\r\nflush_all"), std::string(251, 'k'),
                                 std::string(""), Key("caf\xc3\xa9")}) {
    Result<std::vector<uint64_t>> r =
        store().Apply(Batch{group_, {{Key("ok"), 1, Seconds{60}}, {bad, 1, Seconds{60}}}, {}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    r = store().Apply(Batch{group_, {}, {bad}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    const std::vector<std::string> keys = {bad};
    EXPECT_EQ(store().Delete(group_, keys).error().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(Read({Key("ok")}), (std::vector<uint64_t>{0})) << "a rejected batch changes nothing";
}

TEST_P(StoreContract, ManyKeysInOneBatch) {
  Batch batch{group_, {}, {}};
  for (int i = 0; i < 500; ++i) {
    batch.increments.push_back({Key(std::to_string(i)), i + 1, Seconds{60}});
    batch.reads.push_back(Key(std::to_string(i)));
  }
  Result<std::vector<uint64_t>> values = store().Apply(batch);
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  for (int i = 0; i < 500; ++i)
    EXPECT_EQ((*values)[static_cast<size_t>(i)], static_cast<uint64_t>(i + 1));
}

TEST_P(StoreContract, ApplyManyAnswersEachBatchAsApplyWouldInOrder) {
  const Seconds ttl{60};
  const std::string other = group_ + "-other";
  const std::vector<Batch> batches = {
      Batch{group_, {{Key("a"), 2, ttl}}, {Key("a")}},
      Batch{group_, {{Key("a"), 3, ttl}}, {}},  // without reads, between batches with reads
      Batch{group_, {{Key("a"), 1, ttl}}, {Key("b"), Key("a")}},
      Batch{group_, {{"bad key", 1, ttl}}, {Key("a")}},  // refused alone
      Batch{other, {{other + ":x", 5, ttl}}, {other + ":x"}},
      Batch{group_, {{Key("a"), -4, ttl}}, {Key("a")}},
  };
  std::vector<Result<std::vector<uint64_t>>> results = store().ApplyMany(batches);
  ASSERT_EQ(results.size(), batches.size());
  const std::vector<std::vector<uint64_t>> expected = {{2}, {}, {0, 6}, {}, {5}, {2}};
  for (size_t i = 0; i < batches.size(); ++i) {
    if (i == 3) {
      ASSERT_FALSE(results[i].ok());
      EXPECT_EQ(results[i].error().code(), ErrorCode::kInvalidArgument);
      continue;
    }
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].error().ToString();
    EXPECT_EQ(*results[i], expected[i]) << "batch " << i;
  }
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{2}));
}

TEST_P(StoreContract, ApplyManyOfNothingAndOfManyBatches) {
  EXPECT_TRUE(store().ApplyMany({}).empty());
  std::vector<Batch> batches;
  for (int i = 0; i < 300; ++i) {  // more than a connection lets go unanswered, some without reads
    const bool read = i % 3 != 0;
    batches.push_back(Batch{group_, {{Key("n"), 1, Seconds{60}}}, {}});
    if (read) batches.back().reads.push_back(Key("n"));
  }
  std::vector<Result<std::vector<uint64_t>>> results = store().ApplyMany(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().ToString();
    if (!batches[i].reads.empty()) {
      ASSERT_EQ(*results[i], (std::vector<uint64_t>{i + 1}));
    }
  }
  EXPECT_EQ(Read({Key("n")}), (std::vector<uint64_t>{300}));
}

TEST_P(StoreContract, ConcurrentCreationLosesNoIncrement) {
  // Eight threads create and increment the same fresh keys at once (memcached.md: the binary
  // protocol's create-on-miss loses increments here; add + incr must not).
  constexpr int kThreads = 8;
  constexpr int kRounds = 300;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        const std::string k = Key("fresh" + std::to_string(r));
        if (!store().Apply(Batch{group_, {{k, 1, Seconds{60}}}, {k}}).ok()) ++errors;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  std::vector<std::string> keys;
  for (int r = 0; r < kRounds; ++r) keys.push_back(Key("fresh" + std::to_string(r)));
  for (uint64_t v : Read(keys)) ASSERT_EQ(v, static_cast<uint64_t>(kThreads));
}

// Keys shaped like the engine's buckets (`<group>:<width>:<index>`: seconds, minutes and hours,
// which a layout may pack, and hours), in random batches of hits (a second and its minute),
// take-backs, lone increments and decrements (floored at 0), reads and deletes: every value read is
// what a counter per key holds, and on a conditional store every guard sums those values.
TEST_P(StoreContract, BucketShapedKeysAreCountersUnderRandomBatches) {
  std::mt19937_64 rng(20261124);
  const int64_t t0 = 1'431'859'800 - 7200;  // two hours and a bit of seconds
  const auto bucket = [&](int64_t width, int64_t t) {
    return group_ + ":" + std::to_string(width) + ":" + std::to_string(t / width);
  };
  std::map<std::string, uint64_t> model;
  const auto apply = [&](const Increment& inc) {
    uint64_t& v = model[inc.key];
    v = inc.delta >= 0 ? v + static_cast<uint64_t>(inc.delta)
                       : (v > static_cast<uint64_t>(-inc.delta) ? v + inc.delta : 0);
  };
  for (int round = 0; round < 400; ++round) {
    Batch batch{group_, {}, {}};
    const int parts = 1 + static_cast<int>(rng() % 4);
    for (int p = 0; p < parts; ++p) {
      const int64_t t = t0 + static_cast<int64_t>(rng() % 9000);
      // Magnitudes of every record form: 1, a byte, two bytes, four.
      const int64_t delta = std::vector<int64_t>{1, 1, 1, -1, 2, -3, 300, 70000}[rng() % 8];
      switch (rng() % 4) {
        case 0:  // a hit or take-back: every level
        case 1:
          for (int64_t width : {1, 60, 3600})
            batch.increments.push_back({bucket(width, t), delta, Seconds{600}});
          break;
        case 2:  // one level alone
          batch.increments.push_back(
              {bucket(std::vector<int64_t>{1, 60, 3600}[rng() % 3], t), delta, Seconds{600}});
          break;
        default:  // a second and a minute that is not its own
          batch.increments.push_back({bucket(1, t), delta, Seconds{600}});
          batch.increments.push_back({bucket(60, t + 60), delta, Seconds{600}});
      }
    }
    for (int r = 0; r < 6; ++r) {
      const int64_t t = t0 + static_cast<int64_t>(rng() % 9000);
      batch.reads.push_back(bucket(std::vector<int64_t>{1, 60, 3600}[rng() % 3], t));
    }
    if (!batch.increments.empty()) batch.reads.push_back(batch.increments.front().key);
    // On a conditional store, every third batch carries a guard over some of its reads (as they
    // are before the batch) that holds or fails by one.
    bool holds = true;
    if (store().conditional_batches() && round % 3 == 0) {
      Guard guard{1, 0, {}};
      int64_t sum = 0;
      for (size_t r = 0; r < batch.reads.size(); r += 1 + rng() % 2) {
        const int sign = rng() % 4 == 0 ? -1 : 1;
        const auto value = static_cast<int64_t>(model[batch.reads[r]]);
        guard.terms.push_back({r, sign});
        if (sign < 0) guard.base += value;  // the sum stays at least 1
        sum += sign * value;
      }
      holds = rng() % 2 == 0;
      guard.max = guard.base + sum - (holds ? 0 : 1);
      batch.guards = {guard};
    }
    if (holds) {
      for (const Increment& inc : batch.increments) apply(inc);
    }
    if (round % 50 == 49) {  // delete a few keys
      std::vector<std::string> doomed;
      for (int d = 0; d < 3; ++d) doomed.push_back(batch.reads[rng() % batch.reads.size()]);
      ASSERT_TRUE(store().Apply(batch).ok());
      ASSERT_TRUE(store().Delete(group_, doomed).ok());
      for (const std::string& k : doomed) model.erase(k);
      continue;
    }
    Result<std::vector<uint64_t>> values = store().Apply(batch);
    ASSERT_TRUE(values.ok()) << values.error().ToString();
    for (size_t i = 0; i < batch.reads.size(); ++i) {
      ASSERT_EQ((*values)[i], model[batch.reads[i]]) << "round " << round << " " << batch.reads[i];
    }
    if (!batch.guards.empty()) {
      ASSERT_EQ(values->size(), batch.reads.size() + 1);
      ASSERT_EQ(values->back(), holds ? 1u : 0u) << "round " << round;
    }
  }
  std::vector<std::string> all;
  for (const auto& [key, value] : model) all.push_back(key);
  std::vector<uint64_t> expected;
  for (const auto& [key, value] : model) expected.push_back(value);
  EXPECT_EQ(Read(all), expected);
}

// Threads hitting the same fresh seconds and minutes at once (a packed layout creates one item for
// all of them) lose nothing.
TEST_P(StoreContract, ConcurrentHitsOnBucketShapedKeysLoseNothing) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 200;
  const int64_t t0 = 1'431'856'000;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int r = 0; r < kRounds; ++r) {
        const int64_t t = t0 + r * 37;
        const std::string s = group_ + ":1:" + std::to_string(t);
        const std::string m = group_ + ":60:" + std::to_string(t / 60);
        const int64_t delta = th % 3 == 2 ? -1 : 1;  // some take back (floored where nothing is)
        if (!store()
                 .Apply(Batch{group_, {{s, delta, Seconds{600}}, {m, delta, Seconds{600}}}, {s}})
                 .ok()) {
          ++errors;
        }
        if (delta < 0 &&
            !store().Apply(Batch{group_, {{s, 2, Seconds{600}}, {m, 2, Seconds{600}}}, {}}).ok()) {
          ++errors;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  // Per key: 4 threads add 1, 2 threads subtract 1 then add 2; floors make each value depend on
  // the interleaving, but never below 4 + 2 and never above 4 + 2 * 2.
  std::vector<std::string> keys;
  for (int r = 0; r < kRounds; ++r) {
    const int64_t t = t0 + r * 37;
    keys.push_back(group_ + ":1:" + std::to_string(t));
  }
  for (uint64_t v : Read(keys)) {
    ASSERT_GE(v, 6u);
    ASSERT_LE(v, 8u);
  }
}

// Conditional batches: a store either takes guards (evaluated with the increments and reads as one
// step) or refuses them, changing nothing.
TEST_P(StoreContract, GuardedBatchesApplyOnlyWhenEveryGuardHoldsOrAreRefused) {
  const Seconds ttl{600};
  const std::string s = group_ + ":1:" + std::to_string(1'431'856'000);  // a packed slot, if packed
  const std::string m = group_ + ":60:" + std::to_string(1'431'856'000 / 60);
  const std::string c = Key("c");  // a counter
  ASSERT_TRUE(store().Apply(Batch{group_, {{s, 3, ttl}, {m, 3, ttl}, {c, 2, ttl}}, {}}).ok());
  // s + c <= 6 holds (5): applied; the reads see the increments.
  Batch batch{group_, {{s, 1, ttl}, {m, 1, ttl}, {c, 1, ttl}}, {s, c, m}};
  batch.guards = {Guard{1, 6, {{0, 1}, {1, 1}}}, Guard{0, 10, {{2, 1}}}};
  Result<std::vector<uint64_t>> r = store().Apply(batch);
  if (!store().conditional_batches()) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(Read({s, m, c}), (std::vector<uint64_t>{3, 3, 2})) << "refused: nothing written";
    return;
  }
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(*r, (std::vector<uint64_t>{4, 3, 4, 1})) << "reads, then applied";
  // 1 + s + c = 8 > 6: held back, the reads show the values as they are.
  r = store().Apply(batch);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(*r, (std::vector<uint64_t>{4, 3, 4, 0}));
  // A negative term and a negative base: s - m = 0, -1 + 0 <= 0 holds.
  batch.guards = {Guard{-1, 0, {{0, 1}, {2, -1}}}};
  r = store().Apply(batch);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->back(), 1u);
  // A max below 0 always holds the increments back.
  batch.guards = {Guard{0, -1, {}}};
  r = store().Apply(batch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<uint64_t>{5, 4, 5, 0}));
  // A term naming no read is the caller's error.
  batch.guards = {Guard{0, 5, {{9, 1}}}};
  EXPECT_EQ(store().Apply(batch).error().code(), ErrorCode::kInvalidArgument);
}

// Threads race for the last units under a guard: exactly the units there are are taken, and
// nothing is written by a held back batch (the property atomic checks rest on).
class ConditionalStoreContract : public StoreContract {};

TEST_P(ConditionalStoreContract, RacingGuardedIncrementsTakeExactlyTheRoomThereIs) {
  ASSERT_TRUE(store().conditional_batches());
  constexpr int kThreads = 8, kTries = 40, kRoom = 100;
  const std::string s = group_ + ":1:" + std::to_string(1'431'856'123);
  const std::string h = group_ + ":3600:" + std::to_string(1'431'856'123 / 3600);
  std::atomic<int> applied{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kTries; ++i) {
        Batch batch{group_, {{s, 1, Seconds{600}}, {h, 1, Seconds{600}}}, {h}};
        batch.guards = {Guard{0, kRoom - 1, {{0, 1}}}};
        Result<std::vector<uint64_t>> r = store().Apply(batch);
        if (!r.ok()) {
          ++errors;
        } else if (r->back() == 1) {
          ++applied;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied.load(), kRoom);
  EXPECT_EQ(Read({s, h}), (std::vector<uint64_t>{kRoom, kRoom}));
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract,
                         ::testing::Values("memory", "memory_conditional", "memcached",
                                           "memcached_packed", "memcached_replicated", "redis",
                                           "redis_cluster", "lmdb"),
                         [](const auto& param_info) { return param_info.param; });
INSTANTIATE_TEST_SUITE_P(Stores, ConditionalStoreContract,
                         ::testing::Values("memory_conditional", "redis", "redis_cluster", "lmdb"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace hourglass
