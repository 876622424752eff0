// Sampled denial lines: one per event per period, standing for every denial since the last;
// features escaped so that no byte can forge a line.
#include "hourglass/denial_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace hourglass {
namespace {

TEST(DenialSampler, OneLinePerEventPerPeriodStandingForEveryDenialSince) {
  DenialSampler sampler(std::chrono::seconds{2});
  const Instant t = FromUnix(1'800'000'000);
  std::optional<std::string> first = sampler.Offer("signup", "ann", t);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, "denied: signup \"ann\" (1 denial of signup since the last such line)");
  EXPECT_FALSE(sampler.Offer("signup", "bob", t + Seconds{1}).has_value());
  EXPECT_TRUE(sampler.Offer("login", "bob", t + Seconds{1}).has_value()) << "events apart";
  EXPECT_FALSE(sampler.Offer("signup", "carol", t + Seconds{1}).has_value());
  std::optional<std::string> next = sampler.Offer("signup", "dan", t + Seconds{2});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, "denied: signup \"dan\" (3 denials of signup since the last such line)");
}

TEST(DenialSampler, FlushTellsTheRestOfABurstOnceAPeriodHasPassed) {
  DenialSampler sampler(std::chrono::seconds{1});
  const Instant t = FromUnix(1'800'000'000);
  ASSERT_TRUE(sampler.Offer("signup", "ann", t).has_value());
  EXPECT_FALSE(sampler.Offer("signup", "bob", t).has_value());
  EXPECT_FALSE(sampler.Offer("signup", "carol\n", t).has_value());
  EXPECT_TRUE(sampler.Flush(t).empty()) << "the period since the last line has not passed";
  const std::vector<std::string> lines = sampler.Flush(t + Seconds{1});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "denied: signup \"carol\\x0a\" (2 denials of signup since the last such line)");
  EXPECT_TRUE(sampler.Flush(t + Seconds{5}).empty()) << "every denial told";
  EXPECT_FALSE(sampler.Offer("signup", "dan", t + Seconds{1}).has_value())
      << "the flush was a line: a period from it";
}

TEST(DenialSampler, HostileFeaturesCannotForgeALine) {
  EXPECT_EQ(Printable("a\nb\"c\\d\x01\xff"), "a\\x0ab\\x22c\\x5cd\\x01\\xff");
  EXPECT_EQ(Printable(std::string(200, 'x')), std::string(128, 'x') + "...");
  DenialSampler sampler(std::chrono::seconds{1});
  const std::optional<std::string> line =
      sampler.Offer("e", "x\n2026-11-25T00:00:00.000Z error forged", FromUnix(1));
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->find('\n'), std::string::npos) << *line;
  // A long hostile feature that only a flush names: escaped and cut alike.
  EXPECT_FALSE(sampler.Offer("e", std::string(300, '\n'), FromUnix(1)).has_value());
  const std::vector<std::string> flushed = sampler.Flush(FromUnix(2));
  ASSERT_EQ(flushed.size(), 1u);
  std::string escaped;
  for (int i = 0; i < 128; ++i) escaped += "\\x0a";
  EXPECT_EQ(flushed[0],
            "denied: e \"" + escaped + "...\" (1 denial of e since the last such line)");
}

TEST(DenialSampler, ThreadsOfferingAtOnceLoseNoDenial) {
  DenialSampler sampler(std::chrono::seconds{1});
  std::atomic<uint64_t> accounted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        const Instant at = FromUnix(1'000 + i / 500);  // ten seconds
        if (std::optional<std::string> line = sampler.Offer("e", std::to_string(t), at)) {
          const size_t open = line->find('(');
          accounted += std::stoull(line->substr(open + 1));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // A last line much later stands for every denial since the previous line: together the lines
  // stand for every denial, each once.
  const std::optional<std::string> last = sampler.Offer("e", "end", FromUnix(100'000));
  ASSERT_TRUE(last.has_value());
  accounted += std::stoull(last->substr(last->find('(') + 1));
  EXPECT_EQ(accounted.load(), 20001u);
}

}  // namespace
}  // namespace hourglass
