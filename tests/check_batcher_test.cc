// CheckBatcher with real threads and a real store: every job is answered once, in full; concurrent
// jobs share batches, and jobs submitted together go together; a feature is in one batch at the
// store at a time, so a feature shared by all admits exactly its limit, with one batch at the store
// at a time or two, on memcached, whose checks increment first.
#include "hourglass/check_batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
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

// Each batch leaves out the jobs of the shared feature while another holds it at the store: no
// check reads a hit of the other batch that is denied and not yet taken back. So exactly the
// limit, and the store counts exactly the admitted hits.
TEST_F(CheckBatcherTest, TwoBatchesInFlightAdmitExactlyTheLimitAndTakeEveryDenialBack) {
  SharedFeatureTally tally = TwoBatchesInFlight(*engine_, 40);
  EXPECT_EQ(tally.wrong, 0);
  EXPECT_EQ(tally.admitted, 40);
  over_.harness->store().Flush();
  const Window hour = *Window::Sliding(Seconds{3600});
  Result<Counts> counts = engine_->Count("e", "shared2", {&hour, 1});
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(counts->windows[0].count, 40u) << "the store counts exactly the admitted hits";
}

// Holds the first batch at the store: its on_batch callback records every batch's checks and
// waits in the first until Release. The batcher's jobs meanwhile see its features at the store.
class FirstBatchHeld {
 public:
  std::function<void(size_t)> OnBatch() {
    return [this](size_t checks) {
      std::unique_lock lock(mu_);
      sizes_.push_back(checks);
      if (sizes_.size() > 1) return;
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return released_; });
    };
  }
  void WaitUntilHeld() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return held_; });
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    changed_.notify_all();
  }
  std::vector<size_t> sizes() {
    std::lock_guard lock(mu_);
    return sizes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool held_ = false, released_ = false;
  std::vector<size_t> sizes_;  // guarded by mu_
};

// A batch held at the store (in on_batch) keeps its feature: a job of it waits, and so does a
// later job sharing another feature with that one; jobs of other features go on in a second batch.
// Once the first is back, its sender takes the jobs left, in their order, as one batch.
TEST_F(CheckBatcherTest, AJobWhoseFeatureIsAtTheStoreWaitsAndOthersGoOn) {
  FirstBatchHeld store;
  std::mutex mu;
  std::vector<std::string> answered;  // the first check's feature of each job, in answer order
  const Policy roomy{*ParseLimits("1000/h")};
  {
    CheckBatcher batcher(*engine_, 64, store.OnBatch(), /*max_in_flight=*/2);
    const auto job = [&](std::vector<std::string> features) {
      CheckJob j;
      for (const std::string& f : features) j.checks.push_back({"e", "held-" + f, roomy, 1});
      j.done = [&](std::vector<OwnedCheck> checks, Result<Engine::RequestDecision> decided) {
        std::lock_guard lock(mu);
        EXPECT_TRUE(decided.ok() && decided->allowed);
        answered.push_back(checks.front().feature);
      };
      return j;
    };
    std::vector<CheckJob> first;
    first.push_back(job({"a"}));
    batcher.SubmitAll(std::move(first), /*send_here=*/false);
    store.WaitUntilHeld();
    std::vector<CheckJob> next;
    next.push_back(job({"a"}));       // waits: its feature is at the store
    next.push_back(job({"c"}));       // goes
    next.push_back(job({"a", "b"}));  // waits
    next.push_back(job({"b"}));       // waits behind the job before, which shares "b"
    next.push_back(job({"d"}));       // goes
    batcher.SubmitAll(std::move(next), /*send_here=*/true);
    {
      std::lock_guard lock(mu);
      EXPECT_EQ(answered, (std::vector<std::string>{"held-c", "held-d"}));
    }
    store.Release();
  }  // waits for every job
  EXPECT_EQ(store.sizes(), (std::vector<size_t>{1, 2, 4}));
  EXPECT_EQ(answered,
            (std::vector<std::string>{"held-c", "held-d", "held-a", "held-a", "held-a", "held-b"}));
}

// A job left while its feature was at the store, in a batch that then denied its client, is
// answered from the blocked-client cache, without the store, per its own scope: every check
// blocked (the default), or one binding check (Envoy's).
TEST_F(CheckBatcherTest, AJobLeftBehindADenialIsAnsweredWithoutTheStore) {
  FirstBatchHeld store;
  std::mutex mu;
  std::vector<std::optional<Result<Engine::RequestDecision>>> got(5);
  const Policy one{*ParseLimits("1/h")};
  const Policy roomy{*ParseLimits("1000/h")};
  const auto job = [&](size_t i, std::string other = "",
                       Engine::LocalScope local = Engine::LocalScope::kEveryCheck) {
    CheckJob j{{{"e", "left-denied", one, 1}}, nullptr, local};
    if (!other.empty()) j.checks.push_back({"e", other, roomy, 1});
    j.done = [&, i](std::vector<OwnedCheck>, Result<Engine::RequestDecision> decided) {
      std::lock_guard lock(mu);
      got[i] = std::move(decided);
    };
    return j;
  };
  {
    CheckBatcher batcher(*engine_, 64, store.OnBatch(), /*max_in_flight=*/2);
    std::vector<CheckJob> first;
    first.push_back(job(0));  // admitted
    first.push_back(job(1));  // denied: its client is blocked
    batcher.SubmitAll(std::move(first), /*send_here=*/false);
    store.WaitUntilHeld();
    // Left, as their feature is at the store:
    std::vector<CheckJob> left;
    left.push_back(job(2));  // every check blocked: the cache answers
    left.push_back(job(3, "roomy-any", Engine::LocalScope::kAnyBindingDenial));  // the cache
    left.push_back(job(4, "roomy-every"));  // one of two blocked: the store
    batcher.SubmitAll(std::move(left));
    {
      std::lock_guard lock(mu);
      EXPECT_FALSE(got[2].has_value());
    }
    store.Release();
  }
  EXPECT_EQ(store.sizes(), (std::vector<size_t>{2, 2})) << "the first batch, then job 4's";
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].has_value() && got[i]->ok()) << i;
    EXPECT_EQ((*got[i])->allowed, i == 0) << i;
  }
  EXPECT_EQ((*got[2])->decisions[0].cost.blocked_hits, 1u) << "answered by the cache";
  EXPECT_TRUE((*got[3])->decisions[1].unread) << "answered by the cache, the other check unread";
  EXPECT_FALSE((*got[4])->decisions[1].unread) << "read at the store";
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
