// The decision API's POST bodies: every field a check, a hit and a settlement take, and every bad
// one refused naming the field and the form it must take.
#include "hourglass/request_body.h"

#include <gtest/gtest.h>

#include "hourglass/engine.h"

namespace hourglass {
namespace {

TEST(RequestBody, ACheckTakesCostRecordAndCarriedLimits) {
  Result<std::vector<CheckBody>> one = ParseCheckBodies(
      R"({"event":"llm","feature":"t\u00e9","cost":500,"record":false,"limits":["100/m","2/s, 10000/d"]})",
      16);
  ASSERT_TRUE(one.ok()) << one.error().message();
  ASSERT_EQ(one->size(), 1u);
  const CheckBody& c = one->front();
  EXPECT_EQ(c.event, "llm");
  EXPECT_EQ(c.feature, "t\xc3\xa9");
  EXPECT_EQ(c.cost, 500u);
  EXPECT_FALSE(c.record);
  EXPECT_EQ(c.limits, *ParseLimits("100/m, 2/s, 10000/d"));

  Result<std::vector<CheckBody>> plain = ParseCheckBodies(
      R"({"checks":[{"event":"a","feature":""},{"event":"b","feature":"x"}]})", 16);
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  ASSERT_EQ(plain->size(), 2u);
  EXPECT_EQ((*plain)[0].cost, 1u);
  EXPECT_TRUE((*plain)[0].record);
  EXPECT_TRUE((*plain)[0].limits.empty());
}

TEST(RequestBody, BadChecksAreRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"event":"a","feature":"f","record":"no"})", "\"record\" must be true or false"},
      {R"({"event":"a","feature":"f","limits":"100/m"})", "\"limits\" must be a list of limits"},
      {R"({"event":"a","feature":"f","limits":[]})", "\"limits\" must be a list of limits"},
      {R"({"event":"a","feature":"f","limits":[100]})", "\"limits\"[0] is a number"},
      {R"({"event":"a","feature":"f","limits":{"limits":["5/m"]}})",
       "must be a list of limits, e.g. [\"100/m\", \"10000/d\"], not an object"},
      {R"({"event":"a","feature":"f","limits":[{"window":60,"limit":100}]})",
       "\"limits\"[0] is an object: a limit here is a spec such as \"100/m\""},
      {R"({"event":"a","feature":"f","limits":["lots/m"]})", "\"limits\": "},
      {R"({"checks":[{"event":"a","feature":"f"},{"event":"a","feature":"f","limits":["1/x"]}]})",
       "checks[1]: \"limits\": "},
      {R"({"event":"a","feature":"f","cost":0})", "\"cost\" must be a whole number from 1 to"},
      {R"({"event":"a","feature":"f","ttl":3})",
       "unknown field \"ttl\": a check has event, feature, cost, record, limits"},
      {R"({"event":"a","feature":"f","cost":1,"cost":2})", "field \"cost\" is given twice"},
      {R"({"event":"","feature":"f"})", "\"event\" must be a non-empty string"},
      {R"({"event":"a"})", "\"feature\" must be a string"},
  };
  for (const auto& [body, says] : cases) {
    Result<std::vector<CheckBody>> r = ParseCheckBodies(body, 16);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(RequestBody, AHitTakesEventFeatureAndCostOnly) {
  Result<CheckBody> hit = ParseHitBody(R"({"event":"a","feature":"f","cost":3})");
  ASSERT_TRUE(hit.ok()) << hit.error().message();
  EXPECT_EQ(hit->cost, 3u);
  for (const char* field : {"\"record\":false", "\"limits\":[\"1/m\"]"}) {
    Result<CheckBody> r = ParseHitBody(std::string(R"({"event":"a","feature":"f",)") + field + "}");
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.error().message().find("a hit has event, feature, cost"), std::string::npos)
        << r.error().message();
  }
}

TEST(RequestBody, ASettlementNamesItsDecisionByTokenAndTheTrueCost) {
  Result<SettleBody> s = ParseSettleBody(R"({"token":"abc.def","actual":0})");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->token, "abc.def");
  EXPECT_EQ(s->actual, 0u);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"event":"l","feature":"t","at":1,"cost":5,"actual":6})",
       "a settlement names its decision by the check's \"settle_token\""},
      {R"({"actual":6})", "\"token\" must be the \"settle_token\" the check answered"},
      {R"({"token":"","actual":6})", "\"token\" must be the \"settle_token\""},
      {R"({"token":7,"actual":6})", "\"token\" must be the \"settle_token\""},
      {R"({"token":"a.b"})", "\"actual\" is missing"},
      {R"({"token":"a.b","actual":-1})", "\"actual\" must be a whole number from 0 to"},
      {R"({"token":"a.b","actual":1000000001})",
       "\"actual\" must be a whole number from 0 to 1000000000"},
      {R"({"token":"a.b","actual":6,"hits":1})",
       "unknown field \"hits\": a settlement has token, actual"},
      {R"({"token":"a.b","token":"c.d","actual":6})", "field \"token\" is given twice"},
      {R"([1])", "expected a JSON object"},
  };
  for (const auto& [body, says] : cases) {
    Result<SettleBody> r = ParseSettleBody(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace hourglass
