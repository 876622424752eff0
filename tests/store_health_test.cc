// StoreHealth: full servers from the errors checks meet, told once each way, on a clock the test
// moves.
#include "hourglass/store_health.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hourglass {
namespace {

TEST(StoreHealth, AFullServerIsToldOnceAndForgottenAfterAQuietPeriod) {
  ManualClock clock(FromUnix(2'000'000'000));
  std::vector<std::string> lines;
  StoreHealth health(clock, std::chrono::seconds{10},
                     [&](LogLevel, const std::string& line) { lines.push_back(line); });
  health.Observe(Error(ErrorCode::kUnavailable, "memcached a:1: connection refused"));
  EXPECT_EQ(health.Why(), std::nullopt) << "only a full store counts";
  const Error full(ErrorCode::kStoreFull, "memcached a:1: memcached is full and evicts nothing");
  health.Observe(full);
  clock.Advance(Seconds{6});
  health.Observe(full);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("memcached a:1 is full and refuses new counts"), std::string::npos);
  ASSERT_TRUE(health.Why().has_value());
  EXPECT_EQ(*health.Why(),
            "memcached a:1 is full since 2033-05-18T03:33:20Z: memcached a:1: memcached is full "
            "and evicts nothing");
  clock.Advance(Seconds{9});  // 9 s after the last refusal: still full
  EXPECT_TRUE(health.Why().has_value());
  clock.Advance(Seconds{1});
  EXPECT_EQ(health.Why(), std::nullopt);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("memcached a:1 refused no count for 10 s"), std::string::npos);
  health.Observe(full);
  EXPECT_EQ(lines.size(), 3u) << "full again: told again";
}

}  // namespace
}  // namespace hourglass
