// The HTTP API of `hourglass serve`: requests in, JSON responses out, on one shared engine.
//
//   POST   /v1/check     {"event","feature","cost"} or {"checks":[...]}  200 allowed, 429 denied
//   GET    /v1/count?event=E&feature=F&window=1m&window=1d               counts, no hit
//   GET    /v1/inspect?event=E&feature=F      per-level bucket values and windows (inspect)
//   POST   /v1/hit       {"event","feature","cost"}                      records (admin)
//   DELETE /v1/counters?event=E&feature=F                                resets (admin)
//   GET    /v1/auth/{event}   feature from a request header (nginx auth_request): 204 or 403
//   GET    /healthz           alive;  GET /readyz: 503 while the store cannot be reached
//   GET    /metrics           Prometheus text format (with DecisionApiOptions::metrics)
//
// Decisions carry RateLimit-Policy, RateLimit and (on a denial) Retry-After. An event the policy
// marks `shadow: true` is decided and counted in the metrics as usual, but always allowed; a
// denial let through says "shadow_denied": true. Bad input is 400
// (404 for an event the policy lacks) with {"error": "..."} naming the problem; a store failure
// outside a check (whose policy decides) is 503.
//
// Thread-safety: Handle() may be called from many threads at once, and SetPolicies() from any.
#pragma once

#include <boost/url/url_view.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "hourglass/engine.h"
#include "hourglass/http_server.h"
#include "hourglass/policy_source.h"
#include "hourglass/service_metrics.h"

namespace hourglass {

struct DecisionApiOptions {
  // The request header /v1/auth/{event} takes the feature from (nginx sets it per request).
  std::string feature_header = "X-Real-IP";
  // The mutating admin calls (POST /v1/hit, DELETE /v1/counters): off answers 403; with a token
  // they need "Authorization: Bearer <token>" (401 otherwise).
  bool admin = true;
  std::optional<std::string> admin_token;
  size_t max_checks_per_request = 16;
  // Counted into and served at GET /metrics when set; must outlive the API.
  ServiceMetrics* metrics = nullptr;
  // "Now" for /v1/inspect's timelines: the engine's clock.
  const Clock* clock = &SystemClock::Get();
};

class DecisionApi {
 public:
  DecisionApi(const Engine& engine, std::shared_ptr<const PolicySource> policies,
              DecisionApiOptions options = {});

  HttpResponse Handle(const HttpRequest& request) const;
  void CountReload(bool ok) const;
  // Requests after this call use `policies`; those in flight finish with the old ones.
  void SetPolicies(std::shared_ptr<const PolicySource> policies);

 private:
  std::shared_ptr<const PolicySource> Policies() const;
  HttpResponse Route(const HttpRequest& request, const boost::urls::url_view& url) const;
  HttpResponse Check(const HttpRequest& request) const;
  HttpResponse Count(const boost::urls::url_view& url) const;
  HttpResponse InspectFeature(const boost::urls::url_view& url) const;
  HttpResponse Hit(const HttpRequest& request) const;
  HttpResponse Reset(const HttpRequest& request, const boost::urls::url_view& url) const;
  HttpResponse Auth(const HttpRequest& request, std::string_view event) const;
  HttpResponse Ready() const;
  // The engine's decision on one check, counted in the metrics. A shadow event's denial is let
  // through and `shadow_denied` says so.
  Result<Decision> Decide(const PolicySource& policies, std::string_view event,
                          std::string_view feature, const Policy& policy, uint64_t cost,
                          bool& shadow_denied) const;
  HttpResponse StoreErrorResponse(const Error& e) const;
  std::optional<HttpResponse> RefuseAdmin(const HttpRequest& request) const;

  const Engine& engine_;
  DecisionApiOptions options_;
  mutable std::mutex mu_;
  std::shared_ptr<const PolicySource> policies_;  // guarded by mu_
};

}  // namespace hourglass
