// CLI rendering: times, sparklines, and the JSON shapes scripts depend on.
#include "render.h"

#include <gtest/gtest.h>

namespace hourglass::cli {
namespace {

TEST(Render, TimesAreUtcIso8601) {
  EXPECT_EQ(FormatTime(FromUnix(1431857103)), "2015-05-17T10:05:03Z");
  EXPECT_EQ(FormatTimeOfDay(FromUnix(1431857103), true), "10:05:03");
  EXPECT_EQ(FormatTimeOfDay(FromUnix(1431857103), false), "10:05");
}

TEST(Render, SparklineScalesToTheLargestValue) {
  const std::vector<uint64_t> values = {0, 1, 4, 8};
  EXPECT_EQ(Sparkline(values), "·▁▄█");
  const std::vector<uint64_t> zeros = {0, 0};
  EXPECT_EQ(Sparkline(zeros), "··");
  const std::vector<uint64_t> big = {1, 1000000};
  EXPECT_EQ(Sparkline(big), "▁█");  // a non-zero value never looks like zero
}

TEST(Render, DumpNeverThrowsOnInvalidUtf8) {
  const nlohmann::json j = {{"feature", std::string("caf\xe9\xff")}};
  EXPECT_NO_THROW(Dump(j));
  EXPECT_NE(Dump(j).find("caf"), std::string::npos);
}

TEST(Render, DecisionJsonHasTheContractFields) {
  Decision d;
  d.allowed = false;
  d.recorded = false;
  d.limits.push_back(LimitOutcome{*ParseLimit("5/m"), 5, 0, true, Seconds{12}});
  d.limits.push_back(LimitOutcome{*ParseLimit("0/s"), 0, 0, true, std::nullopt});
  d.retry_after = std::nullopt;
  const nlohmann::json j = DecisionJson(d);
  EXPECT_EQ(j["allowed"], false);
  EXPECT_EQ(j["degraded"], false);
  ASSERT_EQ(j["limits"].size(), 2u);
  EXPECT_EQ(j["limits"][0]["window"], 60);
  EXPECT_EQ(j["limits"][0]["limit"], 5);
  EXPECT_EQ(j["limits"][0]["count"], 5);
  EXPECT_EQ(j["limits"][0]["remaining"], 0);
  EXPECT_EQ(j["limits"][0]["retry_after"], 12);
  EXPECT_TRUE(j["limits"][1]["retry_after"].is_null());
  EXPECT_TRUE(j["retry_after"].is_null());
}

}  // namespace
}  // namespace hourglass::cli
