// An HTTP/1.1 request and response as the service's handlers see them: plain values (the server
// reads and writes them with Boost.Beast, which stays out of the service's public headers).
//
//   HttpRequest request(HttpMethod::kPost, "/v1/check", R"({"event":"e","feature":"f"})");
//   request.Add("X-Real-IP", "203.0.113.7");
//   HttpResponse response(HttpStatus::kTooManyRequests);
//   response.Set("Retry-After", "60");
//
// Field names compare without regard to case, as HTTP's do.
//
// Thread-safety: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"

namespace hourglass {

enum class HttpMethod { kGet, kHead, kPost, kPut, kDelete, kPatch, kOptions, kOther };
// "GET", "POST", ...; "OTHER" for kOther.
std::string_view MethodName(HttpMethod method);

// The status codes the service answers with.
enum class HttpStatus : int {
  kOk = 200,
  kAccepted = 202,
  kNoContent = 204,
  kBadRequest = 400,
  kUnauthorized = 401,
  kForbidden = 403,
  kNotFound = 404,
  kMethodNotAllowed = 405,
  kConflict = 409,
  kPayloadTooLarge = 413,
  kTooManyRequests = 429,
  kRequestHeaderFieldsTooLarge = 431,
  kInternalServerError = 500,
  kServiceUnavailable = 503,
};

struct HttpField {
  std::string name;
  std::string value;
};

// Whether `a` and `b` are the same field name (ASCII, without regard to case).
bool SameFieldName(std::string_view a, std::string_view b);

// A request target split: its path, and its query's parameters decoded (%XX, '+'), in order.
struct QueryParam {
  std::string key;
  std::string value;
};
struct RequestTarget {
  std::string path;
  std::vector<QueryParam> params;
};
// kInvalidArgument ("malformed request target") for a target that is not an origin form
// ("/path?query").
Result<RequestTarget> ParseTarget(std::string_view target);

class HttpRequest {
 public:
  HttpRequest() = default;
  HttpRequest(HttpMethod method, std::string target, std::string body = {})
      : method_(method), target_(std::move(target)), body_(std::move(body)) {}

  HttpMethod method() const { return method_; }
  // The request target as sent: the path and the query ("/v1/count?event=e&feature=f").
  const std::string& target() const { return target_; }
  const std::string& body() const { return body_; }
  std::string& body() { return body_; }
  // Every field, in the order received (a field sent on two lines is two entries).
  const std::vector<HttpField>& fields() const { return fields_; }
  // The value of the first field named `name`, or null.
  const std::string* Find(std::string_view name) const;
  void Add(std::string name, std::string value);

 private:
  HttpMethod method_ = HttpMethod::kGet;
  std::string target_ = "/";
  std::vector<HttpField> fields_;
  std::string body_;
};

class HttpResponse {
 public:
  explicit HttpResponse(HttpStatus status = HttpStatus::kOk, std::string body = {})
      : status_(status), body_(std::move(body)) {}

  HttpStatus status() const { return status_; }
  void set_status(HttpStatus status) { status_ = status; }
  const std::string& body() const { return body_; }
  std::string& body() { return body_; }
  const std::vector<HttpField>& fields() const { return fields_; }
  // The value of the field named `name`, or null.
  const std::string* Find(std::string_view name) const;
  // Sets the field named `name` to `value`, replacing it if set already.
  void Set(std::string_view name, std::string value);
  // Whether the connection may stay open after this response (the server also asks the request
  // and whether it is stopping).
  bool keep_alive() const { return keep_alive_; }
  void set_keep_alive(bool keep) { keep_alive_ = keep; }

 private:
  HttpStatus status_;
  std::vector<HttpField> fields_;
  std::string body_;
  bool keep_alive_ = true;
};

}  // namespace hourglass
