// CheckBatcher with real threads and a real store: every job is answered once, in full; concurrent
// jobs share batches, and jobs submitted together go together; a feature shared by all admits
// exactly its limit with one batch at the store at a time, and with two never more (exactly on a
// store that decides a check atomically).
#include "hourglass/check_batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "store_harness.h"

namespace hourglass {
namespace {

// An engine as a long-running service has it, over a real store of `kind` (testing::MakeHarness).
struct EngineOver {
  explicit EngineOver(const std::string& kind) : harness(testing::MakeHarness(kind)) {
    if (harness == nullptr) return;
    EngineOptions options;
    options.hot_path = HotPathOptions::LongRunning(1024);
    Result<Engine> created = Engine::Create(harness->store(), harness->clock(), std::move(options));
    if (!created.ok()) {
      ADD_FAILURE() << created.error().ToString();
      return;
    }
    engine = std::make_unique<Engine>(std::move(*created));
  }
  std::unique_ptr<testing::StoreHarness> harness;
  std::unique_ptr<Engine> engine;
};

class CheckBatcherTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(engine_, nullptr); }

  EngineOver over_{"memcached_packed"};
  std::unique_ptr<Engine>& engine_ = over_.engine;
};

TEST_F(CheckBatcherTest, ConcurrentJobsShareBatchesAndEachIsAnsweredOnceInFull) {
  std::atomic<size_t> batches{0}, batched{0};
  const Policy shared_limit{*ParseLimits("30/h")};
  const Policy roomy{*ParseLimits("1000/h")};
  constexpr int kThreads = 8, kJobs = 60;
  std::atomic<int> answered{0}, admitted_shared{0}, wrong{0};
  {
    CheckBatcher batcher(*engine_, 64, [&](size_t checks) {
      ++batches;
      batched += checks;
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int j = 0; j < kJobs; ++j) {
          CheckJob job;
          job.checks.push_back({"e", "shared", shared_limit, 1});
          job.checks.push_back({"e", "own" + std::to_string(t * kJobs + j), roomy, 1});
          job.done = [&](std::vector<OwnedCheck> checks, Result<Engine::RequestDecision> decided) {
            ++answered;
            if (checks.size() != 2 || !decided.ok() || decided->decisions.size() != 2 ||
                !decided->decisions[1].allowed ||
                decided->allowed != decided->decisions[0].allowed) {
              ++wrong;
              return;
            }
            if (decided->allowed) ++admitted_shared;
          };
          batcher.Submit(std::move(job));
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }  // the batcher's end waits for what was handed over
  EXPECT_EQ(answered.load(), kThreads * kJobs);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(admitted_shared.load(), 30);
  EXPECT_EQ(batched.load(), static_cast<size_t>(2 * kThreads * kJobs));
  EXPECT_LT(batches.load(), static_cast<size_t>(kThreads * kJobs))
      << "some jobs arrived while a batch was at the store and went together";
}

// What TwoBatchesInFlight saw, once it checked that every job was answered once.
struct SharedFeatureTally {
  int admitted = 0;  // requests admitted, each with one hit of the shared feature
  int wrong = 0;     // refused, or a decision without its two checks or with the roomy one denied
};

// Two batches at the store at once, jobs submitted three at a time, some sent by their submitter
// and some handed over, each with a hit of one feature shared by all (limit `limit`/h) and one of
// its own.
SharedFeatureTally TwoBatchesInFlight(const Engine& engine, int limit) {
  const Policy shared_limit{*ParseLimits(std::to_string(limit) + "/h")};
  const Policy roomy{*ParseLimits("1000/h")};
  constexpr int kThreads = 6, kRounds = 30;
  std::atomic<int> answered{0}, admitted_shared{0}, wrong{0};
  {
    CheckBatcher batcher(engine, 64, {}, /*max_in_flight=*/2);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRounds; ++r) {
          std::vector<CheckJob> jobs(3);
          for (int j = 0; j < 3; ++j) {
            jobs[j].checks.push_back({"e", "shared2", shared_limit, 1});
            jobs[j].checks.push_back(
                {"e", "own2-" + std::to_string((t * kRounds + r) * 3 + j), roomy, 1});
            jobs[j].done = [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> decided) {
              ++answered;
              if (!decided.ok() || decided->decisions.size() != 2 ||
                  !decided->decisions[1].allowed) {
                ++wrong;
              } else if (decided->allowed) {
                ++admitted_shared;
              }
            };
          }
          batcher.SubmitAll(std::move(jobs), /*send_here=*/r % 2 == 0);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(answered.load(), kThreads * kRounds * 3);
  return {admitted_shared.load(), wrong.load()};
}

// On memcached a check is its increment, then its reads: a batch at the store can read the hit of
// the other's check that is denied and not yet taken back, and deny its own for it, as checks
// from two processes can. So never more than the limit, and every denial taken back.
TEST_F(CheckBatcherTest, TwoBatchesInFlightNeverAdmitMoreAndTakeEveryDenialBack) {
  SharedFeatureTally tally = TwoBatchesInFlight(*engine_, 40);
  EXPECT_EQ(tally.wrong, 0);
  EXPECT_GT(tally.admitted, 0);
  EXPECT_LE(tally.admitted, 40);
  over_.harness->store().Flush();
  const Window hour = *Window::Sliding(Seconds{3600});
  Result<Counts> counts = engine_->Count("e", "shared2", {&hour, 1});
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(counts->windows[0].count, static_cast<uint64_t>(tally.admitted))
      << "the store counts exactly the admitted hits";
}

// Where the store decides a check atomically (Redis), a hit over the limit is never written, so
// no check is denied for another's: exactly the limit.
TEST(CheckBatcherOnRedisTest, TwoBatchesInFlightAdmitExactlyTheLimit) {
  EngineOver over("redis");
  ASSERT_NE(over.engine, nullptr);
  SharedFeatureTally tally = TwoBatchesInFlight(*over.engine, 40);
  EXPECT_EQ(tally.wrong, 0);
  EXPECT_EQ(tally.admitted, 40);
}

TEST_F(CheckBatcherTest, JobsHandedOverTogetherGoInOneBatchOffTheSubmittingThread) {
  std::vector<size_t> sizes;
  std::mutex mu;
  std::set<std::thread::id> answered_on;
  {
    CheckBatcher batcher(*engine_, 64, [&](size_t checks) {
      std::lock_guard lock(mu);
      sizes.push_back(checks);
    });
    const Policy policy{*ParseLimits("5/m")};
    std::vector<CheckJob> jobs(10);
    for (int i = 0; i < 10; ++i) {
      jobs[i].checks.push_back({"e", "together" + std::to_string(i), policy, 1});
      jobs[i].done = [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> decided) {
        std::lock_guard lock(mu);
        answered_on.insert(std::this_thread::get_id());
        EXPECT_TRUE(decided.ok() && decided->allowed);
      };
    }
    batcher.SubmitAll(std::move(jobs), /*send_here=*/false);
  }  // waits for them
  EXPECT_EQ(sizes, (std::vector<size_t>{10}));
  ASSERT_EQ(answered_on.size(), 1u);
  EXPECT_NE(*answered_on.begin(), std::this_thread::get_id());
}

TEST_F(CheckBatcherTest, ALoneJobIsSentAtOnceOnTheSubmittingThread) {
  CheckBatcher batcher(*engine_);
  const Policy policy{*ParseLimits("5/m")};
  std::thread::id answered_on;
  CheckJob job{{{"e", "lone", policy, 1}}, nullptr};
  job.done = [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> decided) {
    answered_on = std::this_thread::get_id();
    ASSERT_TRUE(decided.ok());
    ASSERT_EQ(decided->decisions.size(), 1u);
    EXPECT_TRUE(decided->allowed && decided->decisions[0].allowed);
  };
  batcher.Submit(std::move(job));
  EXPECT_EQ(answered_on, std::this_thread::get_id()) << "answered before Submit returned";
}

TEST_F(CheckBatcherTest, AJobLargerThanTheBatchBoundGoesAloneAndABadCheckRefusesItWhole) {
  std::vector<size_t> sizes;
  std::mutex mu;
  CheckBatcher batcher(*engine_, 4, [&](size_t checks) {
    std::lock_guard lock(mu);
    sizes.push_back(checks);
  });
  const Policy policy{*ParseLimits("5/m")};
  CheckJob job;
  for (int i = 0; i < 6; ++i) job.checks.push_back({"e", "big" + std::to_string(i), policy, 1});
  job.checks.push_back({"", "no event", policy, 1});
  job.checks.back().label = "checks[6]";
  std::optional<Result<Engine::RequestDecision>> got;
  job.done = [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> decided) {
    got = std::move(decided);
  };
  batcher.Submit(std::move(job));
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->ok());
  EXPECT_EQ(got->error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(got->error().message(), "checks[6]: event must not be empty");
  EXPECT_EQ(sizes, (std::vector<size_t>{7}));
  // Refused whole: none of the valid checks was counted.
  const Window hour = *Window::Sliding(Seconds{3600});
  for (int i = 0; i < 6; ++i) {
    Result<Counts> counts = engine_->Count("e", "big" + std::to_string(i), {&hour, 1});
    ASSERT_TRUE(counts.ok());
    EXPECT_EQ(counts->windows[0].count, 0u) << i;
  }
}

}  // namespace
}  // namespace hourglass
