// The service's plain HTTP messages: fields found and replaced without regard to case, in the
// order sent, and request targets split into a path and decoded parameters.
#include "hourglass/http_message.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hourglass
