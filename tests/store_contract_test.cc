// The Store contract, run against both stores: the in-memory one and a real memcached.
#include <gtest/gtest.h>

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
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 1, Seconds{2}}}, {}}).ok());
  harness_->Advance(Seconds{1});
  ASSERT_TRUE(store().Apply(Batch{group_, {{Key("a"), 1, Seconds{100}}}, {}}).ok());
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{2}));
  harness_->Advance(Seconds{3});
  EXPECT_EQ(Read({Key("a")}), (std::vector<uint64_t>{0})) << "expired 2s after creation";
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

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract, ::testing::Values("memory", "memcached"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace hourglass
