// The HTTP API of `hourglass serve`: requests in, JSON responses out, on one shared engine.
//
//   POST   /v1/check     {"event","feature","cost","record","limits"} or {"checks":[...]}
//                         200 allowed, 429 denied; "record": false decides without counting (a
//                         peek); "limits" replaces the policy's (events with request_limits)
//   POST   /v1/settle    {"token","actual"}: the decision a check's "settle_token" names cost
//                         `actual`; applied at its second, once (events with settle: true)
//   GET    /v1/count?event=E&feature=F&window=1m&window=1d               counts, no hit
//                         (and "blocked_until" for an event with block_for: null or Unix s)
//   GET    /v1/inspect?event=E&feature=F      per-level bucket values and windows (inspect)
//   POST   /v1/hit       {"event","feature","cost"}                      records (admin)
//   DELETE /v1/counters?event=E&feature=F                                resets (admin)
//   GET    /v1/auth/{event}   feature from a request header (nginx auth_request): 204 or 403
//   GET    /healthz           alive;  GET /readyz: 503 while the store cannot be reached
//   GET    /metrics           Prometheus text format (with DecisionApiOptions::metrics)
//   GET    /v1/top?event=E&window=5m&by=denied&n=20   who is denied or hit most (admin)
//   GET    /v1/policy         the policy in force (admin)
//
// Decisions carry RateLimit-Policy, RateLimit and (on a denial) Retry-After. An event the policy
// marks `shadow: true` is decided and counted in the metrics as usual, but always allowed; a
// denial let through says "shadow_denied": true. Bad input is 400 (an unknown or repeated field
// too) with {"error": "..."} naming the problem; an event the policy lacks is 404 on every
// endpoint; a store failure outside a check (whose policy decides) is 503. A list of checks is
// all or nothing: validated whole before anything is counted, and in admitted mode a denied list
// counts against none of its checks.
//
// HandleAsync() answers checks (/v1/check, /v1/auth) through a CheckFrontEnd (its own, or one it
// shares with the other protocols of the service): checks arriving while others are at the store
// are sent together with the next batch, by the front end's threads; every other request is
// answered as Handle() does, on a thread that may block (HttpResponder::Blocking). It never
// blocks the calling thread on the store.
//
// Thread-safety: Handle() and HandleAsync() may be called from many threads at once, and
// SetPolicies() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "hourglass/api_route.h"
#include "hourglass/check_front_end.h"
#include "hourglass/client_address.h"
#include "hourglass/denial_answers.h"
#include "hourglass/engine.h"
#include "hourglass/http_server.h"
#include "hourglass/policy_source.h"
#include "hourglass/recent_top.h"
#include "hourglass/service_metrics.h"
#include "hourglass/settle_token.h"
#include "hourglass/store_health.h"

namespace hourglass {

struct DecisionApiOptions {
  // The request header /v1/auth/{event} takes the feature from (nginx sets it per request).
  // X-Forwarded-For is read as a list of addresses: the client is the one `trusted_proxies`
  // vouch for, never what the client itself prepended (DecisionApi refuses it without them).
  std::string feature_header = "X-Real-IP";
  TrustedProxies trusted_proxies;
  // The admin calls (POST /v1/hit, DELETE /v1/counters, GET /v1/top, GET /v1/policy): off answers
  // 403; with a token they need "Authorization: Bearer <token>" (401 otherwise).
  bool admin = true;
  std::optional<std::string> admin_token;
  size_t max_checks_per_request = 16;
  // Counted into and served at GET /metrics when set; must outlive the API.
  ServiceMetrics* metrics = nullptr;
  // When set (it must outlive the API), GET /readyz is 503 naming a full store server.
  StoreHealth* health = nullptr;
  // The engine's store, when set (it must outlive the API): its unconfirmed failures are
  // brought into `metrics` at each GET /metrics.
  const Store* store = nullptr;
  // "Now" for /v1/inspect's timelines and /v1/top's window: the engine's clock.
  const Clock* clock = &SystemClock::Get();
  // Every check's decision is recorded into it and GET /v1/top reads it, when set (it must
  // outlive the API); otherwise /v1/top is 404.
  RecentTop* top = nullptr;
  // The policy file's path, shown by GET /v1/policy.
  std::string policy_path;
  // Called with every check the store denied (not a degraded answer), when set; on the thread
  // that answers the request.
  std::function<void(std::string_view event, std::string_view feature, const Decision&)> on_denial;
  // The front end checks go through, shared with the service's other protocols (it must outlive
  // the API); null: the API makes its own.
  CheckFrontEnd* front_end = nullptr;
  // Signs the settle_token of admitted checks of events with settle: true, and verifies what
  // /v1/settle is sent; every service of a deployment needs the same key. Null: a key of this
  // process alone.
  std::shared_ptr<const SettleTokens> settle_tokens;
  // How long a decision may be settled after it (at most the engine's retention).
  Seconds settle_within{3600};
};

class DecisionApi {
 public:
  DecisionApi(const Engine& engine, std::shared_ptr<const PolicySource> policies,
              DecisionApiOptions options = {});

  // `peer`: the connection's peer address, for /v1/auth behind trusted proxies.
  HttpResponse Handle(const HttpRequest& request, std::string_view peer = "") const;
  // `respond` is called once: on this thread (a request decided at once), on a thread that may
  // block, or on the thread that sent the batch.
  void HandleAsync(HttpRequest request, HttpResponder respond);
  void CountReload(bool ok) const;
  // Requests after this call use `policies`; those in flight finish with the old ones.
  void SetPolicies(std::shared_ptr<const PolicySource> policies);
  // The policies in force.
  std::shared_ptr<const PolicySource> Policies() const;

 private:
  HttpResponse Route(const HttpRequest& request, std::string_view peer, const ApiRoute& route,
                     const RequestTarget& url) const;
  HttpResponse Metrics() const;
  HttpResponse Page() const;
  // A check request (/v1/check, or /v1/auth with `auth_event`) parsed, its policies resolved.
  struct PendingChecks {
    std::shared_ptr<const PolicySource> policies;
    std::vector<OwnedCheck> checks;
    bool auth = false;  // answered 204/403 without a body
  };
  // The checks of a request, or the response refusing it.
  std::optional<HttpResponse> PrepareChecks(const HttpRequest& request, std::string_view peer,
                                            const std::optional<std::string>& auth_event,
                                            PendingChecks& pending) const;
  // The response to a decided request (Engine::CheckAll: all or nothing): shadow events let
  // through, metrics counted.
  HttpResponse Decided(const PendingChecks& pending, const std::vector<OwnedCheck>& checks,
                       Result<Engine::RequestDecision> decided) const;
  // Sets `feature` to what the policy counts (an IP event's network), or returns the refusal: 404
  // naming the known events when the policy has no entry for `event`, 400 when an IP event's
  // feature is not an address.
  // `block_for`, when given, is set to the feature's policy's penalty length (0: none).
  std::optional<HttpResponse> Resolve(std::string_view event, std::string& feature,
                                      Seconds* block_for = nullptr) const;
  HttpResponse Check(const HttpRequest& request, std::string_view peer,
                     const std::optional<std::string>& auth) const;
  // The feature of /v1/auth: the feature header's value, or with X-Forwarded-For the client's
  // address as the trusted proxies vouch for it (ClientAddress).
  Result<std::string> AuthFeature(const HttpRequest& request, std::string_view peer) const;
  // Counts a request to `route` that started at `start`.
  void ObserveRequest(const ApiRoute& route, std::chrono::steady_clock::time_point start) const;
  HttpResponse Count(const RequestTarget& url) const;
  HttpResponse InspectFeature(const RequestTarget& url) const;
  HttpResponse Hit(const HttpRequest& request) const;
  // Corrects a decision's charge to its true cost, at the decision's instant.
  HttpResponse Settle(const HttpRequest& request) const;
  // Ends `body` (a decision's JSON object) with its "settle_token", when its event settles and it
  // admitted and recorded its cost.
  void AppendSettleToken(const PolicySource& policies, const OwnedCheck& check,
                         const Decision& decision, std::string& body) const;
  HttpResponse Top(const HttpRequest& request, const RequestTarget& url) const;
  HttpResponse Reset(const HttpRequest& request, const RequestTarget& url) const;
  HttpResponse Ready() const;
  // Counts a decision in the metrics; a shadow event's denial is let through and the result
  // says so.
  bool LetThrough(const PolicySource& policies, std::string_view event, Decision& d) const;
  HttpResponse StoreErrorResponse(const Error& e) const;
  std::optional<HttpResponse> RefuseAdmin(const HttpRequest& request) const;

  const Engine& engine_;
  DecisionApiOptions options_;
  mutable std::mutex mu_;
  std::shared_ptr<const PolicySource> policies_;  // guarded by mu_
  // Raised (under mu_) each time policies_ changes: a thread that took the policies at this
  // version still has them, and takes no lock to learn it.
  std::atomic<uint64_t> policies_version_{0};
  // Unique among every DecisionApi of the process (never reused): keys threads' copies.
  const uint64_t id_;
  // Denials' answers, rendered once for a client denied again in the same second.
  mutable DenialAnswers denials_;
  // Last: destroyed first, it waits for the requests in flight, whose answers use the above.
  std::unique_ptr<CheckFrontEnd> own_front_end_;  // when options_.front_end is null
  CheckFrontEnd& front_end_;
};

}  // namespace hourglass
