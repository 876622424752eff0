// The decision API's POST bodies: every field a check, a hit and a settlement take, and every bad
// one refused naming the field and the form it must take.
#include "hourglass/request_body.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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

// Random bodies near the plain form (fields in any order, repeated, unknown; strings with
// quotes, escapes, control and non-ASCII bytes; numbers in every JSON spelling; a byte cut or
// changed): whatever the quick reading takes, the full parse takes the same, read inside a
// "checks" list where only the full parse reads it.
TEST(RequestBody, APlainCheckReadsAsTheFullParseReadsIt) {
  std::mt19937 rng(20261130);
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  const std::vector<std::string> spaces = {"", "", " ", "\n", "\t", "\r\n  "};
  const std::vector<std::string> keys = {"event",  "feature", "cost",  "event",       "feature",
                                         "record", "limits",  "Event", "ev\\u0065nt", ""};
  const std::vector<std::string> strings = {"\"signup\"", "\"198.51.100.7\"", "\"\"",
                                            "\"a b~!\"",  "\"t\\u00e9\"",     "\"\xc3\xa9\"",
                                            "\"\x01\"",   "\"\x7f\"",         "\"\\\"q\\\"\"",
                                            "\"\xff\"",   "\"open",           "7",
                                            "null"};
  const std::vector<std::string> numbers = {
      "1",   "5",  "1000000000",  "1000000001", "0",    "01", "1.0",
      "1e3", "-1", "99999999999", "\"3\"",      "true", "2 "};
  size_t quick = 0;
  for (int i = 0; i < 60000; ++i) {
    // Half the bodies name event and feature, then perhaps more; in a random order.
    std::vector<std::string> names;
    if (rng() % 2 == 0) names = {"event", "feature"};
    for (int more = std::uniform_int_distribution<int>(0, 3)(rng); more > 0; --more) {
      names.push_back(rng() % 2 == 0 ? "cost" : pick(keys));
    }
    std::shuffle(names.begin(), names.end(), rng);
    std::string body = pick(spaces) + "{";
    for (size_t f = 0; f < names.size(); ++f) {
      const std::string& key = names[f];
      body += (f > 0 ? "," : "") + pick(spaces) + "\"" + key + "\"" + pick(spaces) + ":" +
              pick(spaces) + (key == "cost" ? pick(numbers) : pick(strings)) + pick(spaces);
    }
    body += "}" + pick(spaces);
    if (std::uniform_int_distribution<int>(0, 9)(rng) == 0 && !body.empty()) {
      const size_t at = std::uniform_int_distribution<size_t>(0, body.size() - 1)(rng);
      if (rng() % 2 == 0) {
        body.resize(at);
      } else {
        body[at] = static_cast<char>(rng() % 256);
      }
    }
    const std::optional<CheckBody> plain = ParsePlainCheckBody(body);
    if (!plain) continue;
    ++quick;
    Result<std::vector<CheckBody>> full = ParseCheckBodies("{\"checks\":[" + body + "]}", 16);
    ASSERT_TRUE(full.ok()) << body << ": " << full.error().message();
    ASSERT_EQ(full->size(), 1u);
    const CheckBody& c = full->front();
    EXPECT_EQ(c.event, plain->event) << body;
    EXPECT_EQ(c.feature, plain->feature) << body;
    EXPECT_EQ(c.cost, plain->cost) << body;
    EXPECT_EQ(c.record, plain->record) << body;
    EXPECT_EQ(c.limits, plain->limits) << body;
    Result<std::vector<CheckBody>> alone = ParseCheckBodies(body, 16);
    ASSERT_TRUE(alone.ok()) << body;
    EXPECT_EQ(alone->front().feature, plain->feature) << body;
  }
  EXPECT_GT(quick, 300u) << "the quick reading was tried";
}

}  // namespace
}  // namespace hourglass
