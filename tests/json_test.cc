// The JSON shapes scripts and services depend on.
#include "hourglass/json.h"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

TEST(Json, DumpNeverThrowsOnInvalidUtf8) {
  const nlohmann::json j = {{"feature", std::string("caf\xe9\xff")}};
  EXPECT_NO_THROW(Dump(j));
  EXPECT_NE(Dump(j).find("caf"), std::string::npos);
}

TEST(Json, DecisionJsonHasTheContractFields) {
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
}  // namespace hourglass
