// Where a request to `hourglass serve` goes: the one place that classifies a request path.
//
//   ApiRoute route = RouteOf("/v1/auth/url_shorten");  // kAuth, auth_event "url_shorten"
//   if (route.endpoint == Endpoint::kCheck && method != route.method) ...  // 405, Allow: POST
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hourglass/http_message.h"

namespace hourglass {

enum class Endpoint {
  kCheck,      // POST /v1/check
  kCount,      // GET /v1/count
  kInspect,    // GET /v1/inspect
  kHit,        // POST /v1/hit (admin)
  kSettle,     // POST /v1/settle
  kCounters,   // DELETE /v1/counters (admin)
  kAuth,       // GET /v1/auth/{event}
  kHealthz,    // GET /healthz
  kReadyz,     // GET /readyz
  kMetrics,    // GET /metrics
  kTop,        // GET /v1/top (admin)
  kPolicy,     // GET /v1/policy (admin)
  kEnvoyJson,  // POST /json (Envoy's RateLimitRequest in JSON)
  kPage,       // GET /ui: the operator's page (its data from the admin calls)
  kUnknown,
};

struct ApiRoute {
  Endpoint endpoint = Endpoint::kUnknown;
  HttpMethod method = HttpMethod::kGet;   // the one it takes
  std::string_view label = "other";       // the endpoint in metrics: "/v1/check", "/v1/auth", ...
  std::optional<std::string> auth_event;  // kAuth: the event named by the path
};

// The route of a decoded path (no query); kUnknown for anything else.
ApiRoute RouteOf(std::string_view path);
// Whether a request with `method` to `route` is a check (decided through the batcher).
inline bool IsCheck(const ApiRoute& route, HttpMethod method) {
  return (route.endpoint == Endpoint::kCheck || route.endpoint == Endpoint::kAuth) &&
         method == route.method;
}

}  // namespace hourglass
