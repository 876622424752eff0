// Penalties (Policy::block_for): a denial by a limit blocks the feature for block_for from its
// instant, for every client of the store. Random traces of checks from two engines sharing one
// store (in memory, memcached, memcached packed; plain and hot path), each decision held against
// a brute-force model of the limits and the block; counts, BlockedUntil and reset too.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/key_space.h"
#include "sliding_log.h"
#include "store_harness.h"

namespace hourglass {
namespace {

using testing::SlidingLog;

constexpr int64_t kStart = 1'431'820'800;  // 2015-05-17 00:00:00 UTC

TEST(PenaltyKeys, AStrikeIsReadBackAsItsBlockFromItsSlotAndTheNext) {
  const KeySpace keys(*KeyCodec::Create("hg"), Ladder::Default(), Seconds{86400}, Seconds{5});
  const Seconds b{300};
  const int64_t t = kStart + 299;  // the last second of a slot
  const Increment strike = keys.Strike("g", b, t);
  EXPECT_EQ(strike.key, KeySpace::Penalty("g", b, t).current);
  EXPECT_EQ(strike.ttl, Seconds{605});
  const uint64_t one = static_cast<uint64_t>(strike.delta);
  EXPECT_EQ(KeySpace::BlockedUntil(b, t, 0, one), FromUnix(t + 300));
  EXPECT_EQ(KeySpace::BlockedUntil(b, t + 299, 0, 0), std::nullopt);
  // From the next slot, the block is read from the slot before.
  EXPECT_EQ(KeySpace::Penalty("g", b, t + 1).previous, strike.key);
  EXPECT_EQ(KeySpace::BlockedUntil(b, t + 299, one, 0), FromUnix(t + 300));
  EXPECT_EQ(KeySpace::BlockedUntil(b, t + 300, one, 0), std::nullopt) << "ended";
  // Two strikes that raced (2 s apart, one slot): their mean.
  const uint64_t two = one + static_cast<uint64_t>(keys.Strike("g", b, t - 2).delta);
  EXPECT_EQ(KeySpace::BlockedUntil(b, t, 0, two), FromUnix(t - 1 + 300));
}

using Config = std::tuple<std::string, std::string>;

class PenaltyTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    harness_ = testing::MakeHarness(std::get<0>(GetParam()));
    ASSERT_FALSE(HasFailure());
    clock_ = &testing::ManualClockFor(*harness_, own_clock_, FromUnix(kStart));
  }
  Engine MakeEngine() {
    EngineOptions options;
    options.hot_path = std::get<1>(GetParam()) == "hot" ? HotPathOptions::LongRunning(1024)
                                                        : HotPathOptions::Off();
    Result<Engine> engine = Engine::Create(harness_->store(), *clock_, options);
    EXPECT_TRUE(engine.ok());
    return std::move(*engine);
  }

  // Each limit's count is the window's (`truth`, this hit included if it stays), within
  // [count_min, count] when inexact. A decision read from the store during a block (not answered
  // by the blocked-client cache) is exact: the block settles the decision, not the figures.
  static void ExpectFiguresDescribeTheWindows(const Decision& d, std::vector<uint64_t> truth,
                                              bool blocked, bool attempts) {
    ASSERT_EQ(d.limits.size(), truth.size());
    for (size_t i = 0; i < truth.size(); ++i) {
      const LimitOutcome& o = d.limits[i];
      SCOPED_TRACE(::testing::Message() << "limit " << o.limit.ToString());
      if (blocked && d.cost.blocked_hits == 0) {
        EXPECT_TRUE(o.exact) << "read from the store";
      }
      if (o.exact) {
        EXPECT_EQ(o.count, truth[i]);
        EXPECT_EQ(o.exceeded,
                  truth[i] > o.limit.max_hits || (!d.recorded && truth[i] + 1 > o.limit.max_hits));
      } else {
        EXPECT_LE(o.count_min, truth[i]);
        // The blocked-client cache cannot see attempts other processes recorded since.
        if (d.cost.blocked_hits == 0 || !attempts) {
          EXPECT_GE(o.count, truth[i]);
        }
      }
    }
  }

  // A random trace of checks of two features from two engines against the model; every few
  // steps a count, a BlockedUntil and now and then a reset. Returns how many checks a block
  // denied (the trace must reach some).
  int RunTrace(CountingMode mode, uint32_t seed) {
    const Engine engines[] = {MakeEngine(), MakeEngine()};
    const Policy policy{*ParseLimits("3/m, 8/h"), mode, FailureMode::kFailOpen, Seconds{300}};
    const std::vector<Window> windows = {policy.limits[0].window, policy.limits[1].window};
    struct Model {
      SlidingLog log;
      int64_t blocked_until = 0;
    };
    std::map<std::string, Model> model;
    std::mt19937 rng(seed);
    int64_t t = kStart;
    int blocked = 0;
    for (int step = 0; step < 400; ++step) {
      t += rng() % 4 == 0 ? rng() % 400 : rng() % 20;
      clock_->Set(FromUnix(t));
      const std::string feature = rng() % 2 == 0 ? "ann" : "bob";
      const Engine& engine = engines[rng() % 2];
      Model& m = model[feature];
      SCOPED_TRACE(::testing::Message()
                   << "step " << step << " t+" << t - kStart << " " << feature);
      if (rng() % 40 == 0) {
        EXPECT_TRUE(engine.Reset("login", feature, std::nullopt, policy.block_for).ok());
        m = Model{};
        continue;
      }
      Result<Decision> d = engine.Check("login", feature, policy);
      if (!d.ok()) {
        ADD_FAILURE() << d.error().message();
        return blocked;
      }
      const bool was_blocked = m.blocked_until > t;
      const bool fits = m.log.Window(t, 60) < 3 && m.log.Window(t, 3600) < 8;
      EXPECT_EQ(d->allowed, !was_blocked && fits);
      if (was_blocked) {
        ++blocked;
        EXPECT_EQ(d->blocked_until, FromUnix(m.blocked_until));
        EXPECT_GE(d->retry_after, Seconds{m.blocked_until - t});
      } else if (!fits) {
        m.blocked_until = t + 300;  // this denial strikes
        EXPECT_EQ(d->blocked_until, FromUnix(m.blocked_until));
        EXPECT_GE(d->retry_after, Seconds{300});
      } else {
        EXPECT_EQ(d->blocked_until, std::nullopt);
      }
      if (d->allowed || mode == CountingMode::kAttempts) m.log.Add(t);
      ExpectFiguresDescribeTheWindows(*d, {m.log.Window(t, 60), m.log.Window(t, 3600)}, was_blocked,
                                      mode == CountingMode::kAttempts);
      if (rng() % 5 != 0) continue;
      harness_->store().Flush();  // take-backs and strikes are sent without waiting
      const Engine& reader = engines[rng() % 2];
      Result<Counts> counts = reader.Count("login", feature, windows);
      EXPECT_TRUE(counts.ok());
      if (counts.ok()) {
        EXPECT_EQ(counts->windows[0].count, m.log.Window(t, 60));
        EXPECT_EQ(counts->windows[1].count, m.log.Window(t, 3600));
      }
      Result<std::optional<Instant>> until =
          reader.BlockedUntil("login", feature, policy.block_for);
      EXPECT_TRUE(until.ok());
      if (until.ok()) {
        EXPECT_EQ(*until,
                  m.blocked_until > t ? std::optional(FromUnix(m.blocked_until)) : std::nullopt);
      }
    }
    return blocked;
  }

  std::unique_ptr<testing::StoreHarness> harness_;
  std::unique_ptr<ManualClock> own_clock_;
  ManualClock* clock_ = nullptr;
};

TEST_P(PenaltyTest, AdmittedModeDecisionsCountsAndBlocksFollowTheModel) {
  EXPECT_GT(RunTrace(CountingMode::kAdmitted, 11), 10);
}

TEST_P(PenaltyTest, AttemptsModeCountsTheBlockedAttemptsToo) {
  EXPECT_GT(RunTrace(CountingMode::kAttempts, 12), 10);
}

// The block holds whatever the counts say, and only a reset naming the penalty lifts it.
TEST_P(PenaltyTest, ABlockOutlivesTheCountsThatCausedItUntilAResetLiftsIt) {
  const Engine a = MakeEngine();
  const Engine b = MakeEngine();
  const Policy policy{*ParseLimits("1/s"), CountingMode::kAdmitted, FailureMode::kFailOpen,
                      Seconds{900}};
  ASSERT_TRUE(a.Check("login", "eve", policy)->allowed);
  Result<Decision> denied = a.Check("login", "eve", policy);
  ASSERT_FALSE(denied->allowed);
  EXPECT_EQ(denied->blocked_until, FromUnix(kStart + 900));
  EXPECT_EQ(denied->retry_after, Seconds{900});
  clock_->Set(FromUnix(kStart + 600));  // the second has long passed: 1/s has room again
  Result<Decision> other = b.Check("login", "eve", policy);
  EXPECT_FALSE(other->allowed) << "another client sees the block";
  EXPECT_EQ(other->retry_after, Seconds{300});
  EXPECT_EQ(other->limits[0].count, 0u) << "its hit was taken back";
  EXPECT_TRUE(b.Check("login", "mallory", policy)->allowed) << "per feature";
  Policy peek_policy = policy;
  EXPECT_FALSE(b.Peek("login", "eve", peek_policy)->allowed) << "a peek sees it too";
  ASSERT_TRUE(b.Reset("login", "eve", std::nullopt, policy.block_for).ok());
  EXPECT_TRUE(a.Check("login", "eve", policy)->allowed) << "lifted, for a's cache too";
  clock_->Set(FromUnix(kStart + 600 + 900));
  EXPECT_TRUE(b.Check("login", "eve", policy)->allowed);
}

// Threads of two engines hammer one feature in one second: at most the limit is admitted, every
// denial names the same block (its strikes all fell in that second), and the block holds for
// every client until it ends.
TEST_P(PenaltyTest, ConcurrentDenialsStrikeOneBlockThatHoldsForEveryClient) {
  const Engine engines[] = {MakeEngine(), MakeEngine()};
  const Policy policy{*ParseLimits("3/s"), CountingMode::kAdmitted, FailureMode::kFailOpen,
                      Seconds{60}};
  const Instant t0 = FromUnix(kStart + 7);
  std::atomic<int> admitted{0}, wrong{0};
  auto hammer = [&](int thread, int checks, Instant expected_until) {
    for (int i = 0; i < checks; ++i) {
      Result<Decision> d = engines[(thread + i) % 2].Check("login", "eve", policy);
      if (!d.ok()) {
        ++wrong;
        continue;
      }
      if (d->allowed) {
        ++admitted;
        if (d->blocked_until) ++wrong;
      } else if (d->blocked_until != expected_until) {
        ++wrong;
      }
    }
  };
  auto run = [&](int checks, Instant expected_until) {
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k) threads.emplace_back(hammer, k, checks, expected_until);
    for (std::thread& t : threads) t.join();
  };
  clock_->Set(t0);
  run(25, t0 + Seconds{60});
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(admitted.load(), 1);
  EXPECT_LE(admitted.load(), 3);
  harness_->store().Flush();
  EXPECT_EQ(engines[0].Count("login", "eve", {&policy.limits[0].window, 1})->windows[0].count,
            static_cast<uint64_t>(admitted.load()))
      << "every denial was taken back";
  const int before = admitted.load();
  clock_->Set(t0 + Seconds{30});  // the counts have room again; the block has not ended
  run(10, t0 + Seconds{60});
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(admitted.load(), before);
  clock_->Set(t0 + Seconds{60});
  EXPECT_TRUE(engines[0].Check("login", "eve", policy)->allowed);
  EXPECT_TRUE(engines[1].Check("login", "eve", policy)->allowed);
}

INSTANTIATE_TEST_SUITE_P(StoresAndConfigs, PenaltyTest,
                         ::testing::Combine(::testing::Values("memory", "memcached",
                                                              "memcached_packed", "redis", "lmdb"),
                                            ::testing::Values("plain", "hot")),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" +
                                  std::get<1>(param_info.param);
                         });

}  // namespace
}  // namespace hourglass
