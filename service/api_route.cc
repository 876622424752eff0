#include "hourglass/api_route.h"

#include <array>

namespace hourglass {
namespace {

using boost::beast::http::verb;

struct Fixed {
  std::string_view path;
  Endpoint endpoint;
  verb method;
};

constexpr std::array<Fixed, 12> kFixed = {{
    {"/v1/check", Endpoint::kCheck, verb::post},
    {"/v1/count", Endpoint::kCount, verb::get},
    {"/v1/inspect", Endpoint::kInspect, verb::get},
    {"/v1/hit", Endpoint::kHit, verb::post},
    {"/v1/settle", Endpoint::kSettle, verb::post},
    {"/v1/counters", Endpoint::kCounters, verb::delete_},
    {"/healthz", Endpoint::kHealthz, verb::get},
    {"/readyz", Endpoint::kReadyz, verb::get},
    {"/metrics", Endpoint::kMetrics, verb::get},
    {"/v1/top", Endpoint::kTop, verb::get},
    {"/v1/policy", Endpoint::kPolicy, verb::get},
    {"/json", Endpoint::kEnvoyJson, verb::post},
}};

constexpr std::string_view kAuthPrefix = "/v1/auth/";

}  // namespace

ApiRoute RouteOf(std::string_view path) {
  for (const Fixed& f : kFixed) {
    if (path == f.path) return ApiRoute{f.endpoint, f.method, f.path, std::nullopt};
  }
  if (path.starts_with(kAuthPrefix) && path.size() > kAuthPrefix.size()) {
    return ApiRoute{Endpoint::kAuth, verb::get, "/v1/auth",
                    std::string(path.substr(kAuthPrefix.size()))};
  }
  return ApiRoute{};
}

}  // namespace hourglass
