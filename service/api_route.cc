#include "hourglass/api_route.h"

#include <array>

namespace hourglass {
namespace {

struct Fixed {
  std::string_view path;
  Endpoint endpoint;
  HttpMethod method;
};

constexpr std::array<Fixed, 13> kFixed = {{
    {"/v1/check", Endpoint::kCheck, HttpMethod::kPost},
    {"/v1/count", Endpoint::kCount, HttpMethod::kGet},
    {"/v1/inspect", Endpoint::kInspect, HttpMethod::kGet},
    {"/v1/hit", Endpoint::kHit, HttpMethod::kPost},
    {"/v1/settle", Endpoint::kSettle, HttpMethod::kPost},
    {"/v1/counters", Endpoint::kCounters, HttpMethod::kDelete},
    {"/healthz", Endpoint::kHealthz, HttpMethod::kGet},
    {"/readyz", Endpoint::kReadyz, HttpMethod::kGet},
    {"/metrics", Endpoint::kMetrics, HttpMethod::kGet},
    {"/v1/top", Endpoint::kTop, HttpMethod::kGet},
    {"/v1/policy", Endpoint::kPolicy, HttpMethod::kGet},
    {"/json", Endpoint::kEnvoyJson, HttpMethod::kPost},
    {"/ui", Endpoint::kPage, HttpMethod::kGet},
}};

constexpr std::string_view kAuthPrefix = "/v1/auth/";

}  // namespace

ApiRoute RouteOf(std::string_view path) {
  for (const Fixed& f : kFixed) {
    if (path == f.path) return ApiRoute{f.endpoint, f.method, f.path, std::nullopt};
  }
  if (path.starts_with(kAuthPrefix) && path.size() > kAuthPrefix.size()) {
    return ApiRoute{Endpoint::kAuth, HttpMethod::kGet, "/v1/auth",
                    std::string(path.substr(kAuthPrefix.size()))};
  }
  return ApiRoute{};
}

}  // namespace hourglass
