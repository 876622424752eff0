// CLI rendering: times, sparklines, and the JSON shapes scripts depend on.
#include "render.h"

#include <gtest/gtest.h>

namespace hourglass::cli {
namespace {

TEST(Render, TimesAreUtcIso8601) {
  EXPECT_EQ(FormatTime(FromUnix(1431857103)), "2015-05-17T10:05:03Z");
  EXPECT_EQ(FormatTimeOfDay(FromUnix(1431857103), true), "10:05:03");
  EXPECT_EQ(FormatTimeOfDay(FromUnix(1431857103), false), "10:05");
  // The ends of the accepted range (past 2262, nanosecond clocks overflow).
  EXPECT_EQ(FormatTime(kFirstInstant), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(kLastInstant), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatTimeOfDay(kLastInstant, true), "23:59:59");
}

TEST(Render, SparklineScalesToTheLargestValue) {
  const std::vector<uint64_t> values = {0, 1, 4, 8};
  EXPECT_EQ(Sparkline(values), "·▁▄█");
  const std::vector<uint64_t> zeros = {0, 0};
  EXPECT_EQ(Sparkline(zeros), "··");
  const std::vector<uint64_t> big = {1, 1000000};
  EXPECT_EQ(Sparkline(big), "▁█");  // a non-zero value never looks like zero
}

}  // namespace
}  // namespace hourglass::cli
