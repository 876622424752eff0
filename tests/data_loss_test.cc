// What a check and a count do when their windows reach back before a loss the store told of
// (EngineOptions::losses: a server restarted or flushed): on a real memcached, windows that start
// after the loss stay exact, those that start before it say so, and the policy's on_data_loss
// decides: open admits on what is left, closed denies until the loss has left those windows,
// counting nothing and striking no penalty.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "hourglass/engine.h"
#include "hourglass/memcached_store.h"
#include "hourglass/store_losses.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

constexpr int64_t kNow = 1'431'820'800 + 10 * 3600;  // 2015-05-17 10:00:00 UTC
constexpr int64_t kLoss = kNow - 120;                // two minutes ago

class DataLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << server_.error();
    MemcachedOptions options;
    options.servers = {server_.address()};
    store_ = std::move(*MemcachedStore::Create(options));
    EngineOptions engine;
    engine.losses = &losses_;
    engine_ = std::make_unique<Engine>(*Engine::Create(*store_, clock_, engine));
  }
  void Lose() {
    ASSERT_TRUE(
        losses_.Record({"memcached", server_.address(), FromUnix(kLoss), LossCause::kRestart}));
  }
  static Policy MakePolicy(std::optional<FailureMode> on_data_loss) {
    Policy policy{*ParseLimits("3/m, 10/d"), CountingMode::kAdmitted, FailureMode::kFailOpen,
                  Seconds{600}};
    policy.on_data_loss = on_data_loss;
    return policy;
  }

  testing::MemcachedServer server_;
  std::unique_ptr<MemcachedStore> store_;
  ManualClock clock_{FromUnix(kNow)};
  StoreLosses losses_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(DataLossTest, WithoutALossOnItsServerACheckIsExact) {
  ASSERT_TRUE(
      losses_.Record({"memcached", "10.9.9.9:11211", FromUnix(kLoss), LossCause::kRestart}));
  Result<Decision> d = engine_->Check("signup", "ann", MakePolicy(FailureMode::kFailClosed));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_FALSE(d->degraded);
  EXPECT_TRUE(d->limits[0].exact && d->limits[1].exact);
}

TEST_F(DataLossTest, OpenDecidesOnWhatIsLeftAndSaysSo) {
  Lose();
  Result<Decision> d = engine_->Check("signup", "ann", MakePolicy(FailureMode::kFailOpen));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->recorded);
  EXPECT_TRUE(d->degraded);
  ASSERT_TRUE(d->store_error.has_value());
  EXPECT_EQ(d->store_error->code(), ErrorCode::kDataLoss);
  EXPECT_THAT(d->store_error->message(),
              ::testing::HasSubstr(server_.address() + " restarted at 2015-05-17T09:58:00Z"));
  EXPECT_TRUE(d->limits[0].exact) << "the minute starts after the loss";
  EXPECT_FALSE(d->limits[1].exact) << "the day reaches back before it";
  EXPECT_EQ(d->limits[1].count, 1u) << "what is left";
  const std::vector<Window> windows = {*Window::Sliding(Seconds{60}),
                                       *Window::Sliding(Seconds{86400})};
  Result<Counts> counts = engine_->Count("signup", "ann", windows);
  ASSERT_TRUE(counts.ok());
  ASSERT_TRUE(counts->loss.has_value());
  EXPECT_EQ(counts->loss->at, FromUnix(kLoss));
  EXPECT_FALSE(counts->windows[0].lost);
  EXPECT_TRUE(counts->windows[1].lost);
  EXPECT_EQ(counts->windows[1].count, 1u);
}

TEST_F(DataLossTest, ClosedDeniesUntilTheLossLeavesTheWindowsCountingNothing) {
  Lose();
  const Policy policy = MakePolicy(FailureMode::kFailClosed);
  Result<Decision> d = engine_->Check("signup", "ann", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(d->recorded) << "a refused check changes no count";
  EXPECT_TRUE(d->degraded);
  EXPECT_EQ(d->store_error->code(), ErrorCode::kDataLoss);
  EXPECT_THAT(d->store_error->message(), ::testing::HasSubstr("closed"));
  // The day window starting at kNow - 86399 holds the loss until it starts after it.
  EXPECT_EQ(d->retry_after, Seconds{kLoss - (kNow - 86399)});
  EXPECT_FALSE(d->limits[0].exceeded || d->limits[1].exceeded) << "no limit denied it";
  EXPECT_EQ(d->blocked_until, std::nullopt) << "a loss strikes no penalty";
  store_->Flush();
  Result<std::optional<Instant>> until = engine_->BlockedUntil("signup", "ann", policy.block_for);
  ASSERT_TRUE(until.ok());
  EXPECT_EQ(*until, std::nullopt);
  const std::vector<Window> day = {*Window::Sliding(Seconds{86400})};
  EXPECT_EQ(engine_->Count("signup", "ann", day)->windows[0].count, 0u);
  // Unset, on_data_loss follows on_store_failure (open here).
  EXPECT_TRUE(engine_->Check("signup", "ann", MakePolicy(std::nullopt))->allowed);
  // Once the loss has left the day window, the check is exact again.
  clock_.Set(FromUnix(kLoss + 86399));
  d = engine_->Check("signup", "bob", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_FALSE(d->degraded);
}

}  // namespace
}  // namespace hourglass
