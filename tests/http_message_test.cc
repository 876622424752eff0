// The service's plain HTTP messages: fields found and replaced without regard to case, in the
// order sent, and request targets split into a path and decoded parameters.
#include "hourglass/http_message.h"

#include <gtest/gtest.h>

#include <boost/url/parse.hpp>
#include <random>

namespace hourglass {
namespace {

TEST(HttpRequest, FieldsKeepTheirOrderAndAreFoundWithoutCase) {
  HttpRequest request(HttpMethod::kGet, "/v1/auth/e");
  request.Add("X-Forwarded-For", "6.6.6.6");
  request.Add("x-forwarded-for", "203.0.113.7");
  ASSERT_EQ(request.fields().size(), 2u);
  EXPECT_EQ(request.fields()[1].value, "203.0.113.7");
  ASSERT_NE(request.Find("X-FORWARDED-FOR"), nullptr);
  EXPECT_EQ(*request.Find("X-FORWARDED-FOR"), "6.6.6.6") << "the first of them";
  EXPECT_EQ(request.Find("X-Real-IP"), nullptr);
  EXPECT_EQ(MethodName(request.method()), "GET");
  EXPECT_EQ(MethodName(HttpMethod::kDelete), "DELETE");
}

TEST(HttpResponse, SetReplacesAFieldOfAnyCase) {
  HttpResponse response(HttpStatus::kTooManyRequests, "{}");
  response.Set("Retry-After", "60");
  response.Set("retry-after", "30");
  ASSERT_EQ(response.fields().size(), 1u);
  EXPECT_EQ(*response.Find("RETRY-AFTER"), "30");
  EXPECT_EQ(static_cast<int>(response.status()), 429);
  EXPECT_TRUE(response.keep_alive());
}

TEST(ParseTarget, SplitsThePathFromDecodedParametersInOrder) {
  Result<RequestTarget> t = ParseTarget("/v1/count?event=e&feature=a%20b%2Bc&window=1m&window=1d");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->path, "/v1/count");
  ASSERT_EQ(t->params.size(), 4u);
  EXPECT_EQ(t->params[1].key, "feature");
  EXPECT_EQ(t->params[1].value, "a b+c");
  EXPECT_EQ(t->params[3].value, "1d");
  EXPECT_TRUE(ParseTarget("/healthz")->params.empty());
  for (const char* bad : {"", "v1/count", "http://h/x", "/a b"}) {
    Result<RequestTarget> r = ParseTarget(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.error().message(), "malformed request target");
  }
}

// A plain path is read without Boost.URL: the same as Boost.URL reads it, on random targets.
TEST(ParseTarget, ReadsEveryTargetAsBoostUrlDoes) {
  const std::string alphabet = "/aZ09-._~%2f?=&# +:@!$'()*,;[]\x7f\x01";
  std::mt19937_64 rng(5);
  int plain = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string target = rng() % 4 == 0 ? "" : "/";
    for (size_t n = rng() % 12, i = 0; i < n; ++i) {
      target += alphabet[rng() % (rng() % 3 == 0 ? alphabet.size() : 9)];
    }
    const auto url = boost::urls::parse_origin_form(target);
    const Result<RequestTarget> got = ParseTarget(target);
    ASSERT_EQ(got.ok(), url.has_value()) << target;
    if (!got.ok()) continue;
    ASSERT_EQ(got->path, std::string(url->path())) << target;
    std::vector<QueryParam> want;
    for (const auto& p : url->params()) want.push_back({p.key, p.value});
    ASSERT_EQ(got->params.size(), want.size()) << target;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got->params[i].key, want[i].key) << target;
      EXPECT_EQ(got->params[i].value, want[i].value) << target;
    }
    plain += want.empty() && target.find_first_of("%?") == std::string::npos;
  }
  EXPECT_GT(plain, 1000) << "plain paths were tried";
}

}  // namespace
}  // namespace hourglass
