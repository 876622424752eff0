// StoreLosses: the latest loss per server, found by the servers a group lives on and the first
// second of its longest window.
#include "hourglass/store_losses.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace hourglass {
namespace {

TEST(StoreLosses, AWindowReachingBackBeforeALossOnItsServerFindsIt) {
  StoreLosses losses;
  EXPECT_FALSE(losses.any());
  const std::vector<std::string> a = {"a:1"}, b = {"b:1"}, both = {"a:1", "b:1"};
  EXPECT_TRUE(losses.Record({"memcached", "a:1", FromUnix(1000), LossCause::kRestart}));
  EXPECT_TRUE(losses.any());
  EXPECT_TRUE(losses.AnyAfter(999));
  EXPECT_FALSE(losses.AnyAfter(1000)) << "checks of windows from the loss on skip the lookup";
  ASSERT_TRUE(losses.Since(a, 999).has_value());
  EXPECT_EQ(losses.Since(a, 999)->at, FromUnix(1000));
  EXPECT_FALSE(losses.Since(a, 1000).has_value()) << "a window from the loss on is whole";
  EXPECT_FALSE(losses.Since(b, 0).has_value()) << "another server";
  EXPECT_TRUE(losses.Since(both, 0).has_value());
  EXPECT_EQ(losses.Since(a, 0)->Describe(), "memcached a:1 restarted at 1970-01-01T00:16:40Z");
}

TEST(StoreLosses, ALaterLossReplacesAnEarlierOneAndTheLatestOfSeveralServersWins) {
  StoreLosses losses;
  EXPECT_TRUE(losses.Record({"memcached", "a:1", FromUnix(1000), LossCause::kRestart}));
  EXPECT_FALSE(losses.Record({"memcached", "a:1", FromUnix(900), LossCause::kFlush}))
      << "older than the one known";
  EXPECT_FALSE(losses.Record({"memcached", "a:1", FromUnix(1000), LossCause::kFlush}));
  EXPECT_TRUE(losses.Record({"memcached", "a:1", FromUnix(2000), LossCause::kFlush}));
  EXPECT_TRUE(losses.Record({"memcached", "b:1", FromUnix(1500), LossCause::kRestart}));
  const std::vector<std::string> both = {"a:1", "b:1"};
  EXPECT_EQ(losses.Since(both, 0)->server, "a:1");
  EXPECT_EQ(losses.Since(both, 0)->cause, LossCause::kFlush);
  EXPECT_EQ(losses.Since(both, 0)->Describe(), "memcached a:1 flushed at 1970-01-01T00:33:20Z");
}

// Recorded and read from several threads at once (for ThreadSanitizer): the latest wins.
TEST(StoreLosses, RecordAndSinceFromManyThreads) {
  StoreLosses losses;
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&losses, k] {
      const std::vector<std::string> servers = {"s:" + std::to_string(k % 2)};
      for (int i = 1; i <= 1000; ++i) {
        losses.Record({"redis", servers[0], FromUnix(i * 4 + k), LossCause::kRestart});
        static_cast<void>(losses.Since(servers, i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<std::string> zero = {"s:0"}, one = {"s:1"};
  EXPECT_EQ(losses.Since(zero, 0)->at, FromUnix(4002));
  EXPECT_EQ(losses.Since(one, 0)->at, FromUnix(4003));
}

// A loss travels between processes as a note on its server: each cause and the "none" a watch
// leaves read back as written; anything else is named as no loss note.
TEST(LossNote, ReadsBackAsWrittenAndRefusesOtherText) {
  for (LossCause cause : {LossCause::kRestart, LossCause::kFlush, LossCause::kEviction}) {
    const StoreLoss loss{"redis", "h:6379", FromUnix(1'795'000'000), cause};
    Result<std::optional<StoreLoss>> back = ParseLossNote(LossNote(loss), "redis", "h:6379");
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    ASSERT_TRUE(back->has_value());
    EXPECT_EQ((*back)->Describe(), loss.Describe());
  }
  EXPECT_EQ(LossNote(std::nullopt), "loss none");
  Result<std::optional<StoreLoss>> none = ParseLossNote("loss none", "memcached", "h:1");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(LossNote(StoreLoss{"memcached", "h:1", FromUnix(7), LossCause::kRestart}),
            "loss 7 restarted");
  for (const char* bad : {"", "loss", "loss 12", "loss 12 exploded", "loss -5 restarted",
                          "loss 0 restarted", "loss x restarted", "hello", "loss 12restarted"}) {
    Result<std::optional<StoreLoss>> r = ParseLossNote(bad, "memcached", "h:1");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("memcached h:1"), std::string::npos) << r.error().message();
  }
}

TEST(StoreLosses, LatestIsTheServersNewestLoss) {
  StoreLosses losses;
  EXPECT_FALSE(losses.Latest("a:1").has_value());
  losses.Record({"memcached", "a:1", FromUnix(1000), LossCause::kRestart});
  losses.Record({"memcached", "a:1", FromUnix(900), LossCause::kFlush});
  losses.Record({"memcached", "b:1", FromUnix(2000), LossCause::kFlush});
  ASSERT_TRUE(losses.Latest("a:1").has_value());
  EXPECT_EQ(losses.Latest("a:1")->at, FromUnix(1000));
  EXPECT_EQ(losses.Latest("a:1")->cause, LossCause::kRestart);
}

}  // namespace
}  // namespace hourglass
