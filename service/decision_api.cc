#include "hourglass/decision_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/admin_views.h"
#include "hourglass/api_route.h"
#include "hourglass/inspection.h"
#include "hourglass/instance_id.h"
#include "hourglass/json.h"
#include "hourglass/operator_page.h"
#include "hourglass/ratelimit_headers.h"
#include "hourglass/request_body.h"

namespace hourglass {
namespace {

using nlohmann::json;

// A response with a JSON body already written.
HttpResponse JsonText(HttpStatus status, std::string body) {
  HttpResponse res(status, std::move(body));
  res.Set("Content-Type", "application/json");
  return res;
}

HttpResponse JsonResponse(HttpStatus status, const json& body) {
  return JsonText(status, Dump(body) + "\n");
}

HttpResponse ErrorResponse(HttpStatus status, const std::string& message) {
  return JsonResponse(status, json{{"error", message}});
}

HttpStatus StatusFor(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kInvalidArgument:
      return HttpStatus::kBadRequest;
    case ErrorCode::kNotFound:
      return HttpStatus::kNotFound;
    default:
      return HttpStatus::kServiceUnavailable;
  }
}

HttpResponse ErrorResponse(const Error& e) { return ErrorResponse(StatusFor(e), e.message()); }

void SetFields(HttpResponse& res, RateLimitFields fields) {
  if (!fields.policy.empty()) res.Set("RateLimit-Policy", std::move(fields.policy));
  if (!fields.current.empty()) res.Set("RateLimit", std::move(fields.current));
  if (fields.retry_after) res.Set("Retry-After", std::move(*fields.retry_after));
}

// An answer given by the failure mode because the store failed says so in a header, so that an
// app or a proxy can tell it from a real decision: `Hourglass-Degraded: <the store's error>`
// (control bytes as spaces, at most 200 bytes).
void SetDegraded(HttpResponse& res, const std::vector<Decision>& decisions) {
  for (const Decision& d : decisions) {
    if (!d.degraded) continue;
    std::string why = d.store_error ? d.store_error->message().substr(0, 200) : "store failed";
    for (char& c : why) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    res.Set("Hourglass-Degraded", why);
    return;
  }
}

// The query parameters of a request target, decoded.
struct Query {
  std::optional<std::string> event, feature;
  std::vector<std::string> windows;
};

Result<Query> ParseQuery(const RequestTarget& target) {
  Query q;
  for (const QueryParam& param : target.params) {
    if (param.key == "event") {
      q.event = param.value;
    } else if (param.key == "feature") {
      q.feature = param.value;
    } else if (param.key == "window") {
      q.windows.push_back(param.value);
    } else {
      return InvalidArgument(fmt::format(
          "unknown query parameter \"{}\": expected event, feature, window", param.key));
    }
  }
  if (!q.event || q.event->empty()) return InvalidArgument("query parameter \"event\" is missing");
  if (!q.feature) return InvalidArgument("query parameter \"feature\" is missing");
  return q;
}

HttpResponse NoSuchEndpoint() {
  return ErrorResponse(HttpStatus::kNotFound, "no such endpoint: see `hourglass serve --help`");
}

HttpResponse MethodNotAllowed(std::string_view allow) {
  HttpResponse res = ErrorResponse(HttpStatus::kMethodNotAllowed,
                                   fmt::format("method not allowed here: use {}", allow));
  res.Set("Allow", std::string(allow));
  return res;
}

// Whether `authorization` is "Bearer <token>": the scheme in any case (RFC 9110 11.1), one or
// more spaces, then exactly `token`, compared in time that does not depend on where they differ.
bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  std::string_view given = authorization.substr(kScheme.size());
  if (given.front() != ' ') return false;
  given.remove_prefix(std::min(given.find_first_not_of(' '), given.size()));
  if (given.size() != token.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    differ |= static_cast<unsigned char>(given[i] ^ token[i]);
  }
  return differ == 0;
}

}  // namespace

DecisionApi::DecisionApi(const Engine& engine, std::shared_ptr<const PolicySource> policies,
                         DecisionApiOptions options)
    : engine_(engine),
      options_(std::move(options)),
      policies_(std::move(policies)),
      id_(NextInstanceId()),
      own_front_end_(options_.front_end != nullptr
                         ? nullptr
                         : std::make_unique<CheckFrontEnd>(engine, options_.metrics)),
      front_end_(options_.front_end != nullptr ? *options_.front_end : *own_front_end_) {
  if (options_.settle_tokens == nullptr) {
    options_.settle_tokens = std::make_shared<const SettleTokens>(SettleTokens::WithRandomKey());
  }
}

void DecisionApi::SetPolicies(std::shared_ptr<const PolicySource> policies) {
  std::lock_guard lock(mu_);
  policies_ = std::move(policies);
  policies_version_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const PolicySource> DecisionApi::Policies() const {
  // Each thread hands out a pointer of its own, whose count of users only it writes (it holds
  // one user of the shared pointer): requests on different cores then share no written cache
  // line to take the policies. Taken again once SetPolicies has run.
  thread_local struct {
    uint64_t api = 0;
    uint64_t version = 0;
    std::shared_ptr<const PolicySource> policies;
  } mine;
  if (mine.api == id_ && mine.version == policies_version_.load(std::memory_order_acquire)) {
    return mine.policies;
  }
  std::lock_guard lock(mu_);
  mine.api = id_;
  mine.version = policies_version_.load(std::memory_order_relaxed);
  mine.policies = std::shared_ptr<const PolicySource>(policies_.get(),
                                                      [shared = policies_](const PolicySource*) {});
  return mine.policies;
}

void DecisionApi::CountReload(bool ok) const {
  if (options_.metrics == nullptr) return;
  options_.metrics->CountReload(
      ok, options_.clock != nullptr ? options_.clock->Now() : SystemClock::Get().Now());
}

HttpResponse DecisionApi::StoreErrorResponse(const Error& e) const {
  const HttpStatus status = StatusFor(e);
  if (status == HttpStatus::kServiceUnavailable && options_.metrics != nullptr) {
    options_.metrics->CountStoreError(e);
  }
  return ErrorResponse(status, e.message());
}

HttpResponse DecisionApi::Handle(const HttpRequest& request, std::string_view peer) const {
  const auto start = std::chrono::steady_clock::now();
  Result<RequestTarget> url = ParseTarget(request.target());
  if (!url.ok()) return ErrorResponse(url.error());
  const ApiRoute route = RouteOf(url->path);
  HttpResponse response = Route(request, peer, route, *url);
  ObserveRequest(route, start);
  return response;
}

void DecisionApi::HandleAsync(HttpRequest request, HttpResponder respond) {
  const auto start = std::chrono::steady_clock::now();
  Result<RequestTarget> url = ParseTarget(request.target());
  const ApiRoute route = url.ok() ? RouteOf(url->path) : ApiRoute{};
  if (!IsCheck(route, request.method())) {
    // Counts, resets and the rest read the store: off the connection's thread.
    return respond.Blocking([this, request = std::move(request)](HttpResponder answer) {
      answer(Handle(request, answer.peer()));
    });
  }
  PendingChecks prepared;
  if (std::optional<HttpResponse> refused =
          PrepareChecks(request, respond.peer(), route.auth_event, prepared)) {
    ObserveRequest(route, start);
    return respond(std::move(*refused));
  }
  // A client denied moments ago is answered here and now, with nothing to carry to another thread.
  if (std::optional<Engine::RequestDecision> decided = front_end_.DecideAtOnce(prepared.checks)) {
    HttpResponse response = Decided(prepared, prepared.checks, std::move(*decided));
    ObserveRequest(route, start);
    return respond(std::move(response));
  }
  std::vector<OwnedCheck> checks = std::move(prepared.checks);
  auto pending = std::make_shared<PendingChecks>(std::move(prepared));
  // The front end's threads send it: the connection's thread goes on with its other connections.
  CheckFrontEnd::Gather hand_over(front_end_, /*hand_over=*/true);
  front_end_.SubmitToStore(std::move(checks), [this, pending, respond = std::move(respond), start,
                                               route](std::vector<OwnedCheck> decided_checks,
                                                      Result<Engine::RequestDecision> decided) {
    HttpResponse response = Decided(*pending, decided_checks, std::move(decided));
    ObserveRequest(route, start);
    respond(std::move(response));
  });
}

void DecisionApi::ObserveRequest(const ApiRoute& route,
                                 std::chrono::steady_clock::time_point start) const {
  if (options_.metrics == nullptr) return;
  options_.metrics->ObserveRequest(route.label, std::chrono::steady_clock::now() - start);
}

HttpResponse DecisionApi::Route(const HttpRequest& request, std::string_view peer,
                                const ApiRoute& route, const RequestTarget& url) const {
  // Envoy's /json is its service's, and /metrics is served only with metrics.
  const bool served = route.endpoint != Endpoint::kUnknown &&
                      route.endpoint != Endpoint::kEnvoyJson &&
                      (route.endpoint != Endpoint::kMetrics || options_.metrics != nullptr);
  if (!served) return NoSuchEndpoint();
  if (request.method() != route.method) {
    return MethodNotAllowed(MethodName(route.method));
  }
  switch (route.endpoint) {
    case Endpoint::kCheck:
      return Check(request, peer, std::nullopt);
    case Endpoint::kAuth:
      return Check(request, peer, route.auth_event);
    case Endpoint::kCount:
      return Count(url);
    case Endpoint::kInspect:
      return InspectFeature(url);
    case Endpoint::kHit:
      return Hit(request);
    case Endpoint::kSettle:
      return Settle(request);
    case Endpoint::kCounters:
      return Reset(request, url);
    case Endpoint::kHealthz:
      return JsonResponse(HttpStatus::kOk, json{{"status", "alive"}});
    case Endpoint::kReadyz:
      return Ready();
    case Endpoint::kMetrics:
      return Metrics();
    case Endpoint::kTop:
      return Top(request, url);
    case Endpoint::kPolicy:
      if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return std::move(*refused);
      return JsonText(HttpStatus::kOk, PolicyView(*Policies(), options_.policy_path));
    case Endpoint::kPage:
      return Page();
    case Endpoint::kEnvoyJson:
    case Endpoint::kUnknown:
      break;
  }
  return NoSuchEndpoint();
}

HttpResponse DecisionApi::Page() const {
  // Its data come from the admin calls, guarded each; with them turned off, there is no page.
  if (!options_.admin) {
    return ErrorResponse(HttpStatus::kForbidden,
                         "admin calls are turned off on this server (hourglass serve --no-admin)");
  }
  HttpResponse res(HttpStatus::kOk);
  res.Set("Content-Type", "text/html; charset=utf-8");
  res.Set("Content-Security-Policy", std::string(kOperatorPagePolicy));
  res.Set("X-Content-Type-Options", "nosniff");
  res.Set("Cache-Control", "no-store");
  res.body() = OperatorPageHtml();
  return res;
}

HttpResponse DecisionApi::Metrics() const {
  HttpResponse res(HttpStatus::kOk);
  res.Set("Content-Type", "text/plain; version=0.0.4");
  if (options_.store != nullptr) {
    options_.metrics->SyncUnconfirmedFailures(options_.store->unconfirmed_failures());
  }
  res.body() = options_.metrics->Render();
  return res;
}

bool DecisionApi::LetThrough(const PolicySource& policies, std::string_view event,
                             Decision& d) const {
  const bool shadow = policies.IsShadow(event);
  if (options_.metrics != nullptr) options_.metrics->CountDecision(event, d, shadow);
  if (!shadow || d.allowed) return false;
  d.allowed = true;  // let through: allowed, nothing to wait for
  d.retry_after = Seconds{0};
  return true;
}

Result<std::string> DecisionApi::AuthFeature(const HttpRequest& request,
                                             std::string_view peer) const {
  const std::string& name = options_.feature_header;
  if (SameFieldName(name, "X-Forwarded-For")) {
    // Several header lines are one list, in their order.
    std::string joined;
    for (const HttpField& field : request.fields()) {
      if (!SameFieldName(field.name, name)) continue;
      if (!joined.empty()) joined += ',';
      joined += field.value;
    }
    return ClientAddress(peer, joined, options_.trusted_proxies);
  }
  const std::string* header = request.Find(name);
  if (header == nullptr) {
    return InvalidArgument(
        fmt::format("header {} is missing: the proxy must set it to the feature", name));
  }
  return *header;
}

std::optional<HttpResponse> DecisionApi::PrepareChecks(const HttpRequest& request,
                                                       std::string_view peer,
                                                       const std::optional<std::string>& auth_event,
                                                       PendingChecks& pending) const {
  std::vector<CheckBody> requested;
  if (auth_event) {
    Result<std::string> feature = AuthFeature(request, peer);
    if (!feature.ok()) return ErrorResponse(feature.error());
    CheckBody& check = requested.emplace_back();
    check.event = *auth_event;
    check.feature = std::move(*feature);
  } else {
    Result<std::vector<CheckBody>> checks =
        ParseCheckBodies(request.body(), options_.max_checks_per_request);
    if (!checks.ok()) return ErrorResponse(checks.error());
    requested = std::move(*checks);
  }
  pending.policies = Policies();
  pending.auth = auth_event.has_value();
  for (size_t i = 0; i < requested.size(); ++i) {
    CheckBody& c = requested[i];
    const std::string label = requested.size() > 1 ? fmt::format("checks[{}]", i) : "";
    Result<Resolved> resolved = pending.policies->Resolve(c.event, c.feature, c.limits);
    if (!resolved.ok()) {
      return ErrorResponse(
          StatusFor(resolved.error()),
          label.empty() ? resolved.error().message() : label + ": " + resolved.error().message());
    }
    OwnedCheck check;
    check.binding = !pending.policies->IsShadow(c.event);
    check.event = std::move(c.event);
    check.feature = std::move(resolved->feature);
    check.policy = std::move(resolved->policy);
    check.hits = c.cost;
    check.record = c.record;
    check.label = label;
    pending.checks.push_back(std::move(check));
  }
  return std::nullopt;
}

HttpResponse DecisionApi::Check(const HttpRequest& request, std::string_view peer,
                                const std::optional<std::string>& auth) const {
  PendingChecks pending;
  if (std::optional<HttpResponse> refused = PrepareChecks(request, peer, auth, pending)) {
    return std::move(*refused);
  }
  return Decided(pending, pending.checks, engine_.CheckAll(RequestsOf(pending.checks)));
}

HttpResponse DecisionApi::Decided(const PendingChecks& pending,
                                  const std::vector<OwnedCheck>& checks,
                                  Result<Engine::RequestDecision> result) const {
  if (!result.ok()) return ErrorResponse(result.error());
  std::vector<Decision>& decisions = result->decisions;
  std::vector<bool> shadow_denied;
  const bool allowed = result->allowed;
  for (size_t i = 0; i < checks.size(); ++i) {
    // Who is limited: the engine's decision (a shadow event's would-be denials count as denied).
    if (options_.top != nullptr && checks[i].record && !decisions[i].degraded) {
      options_.top->Record(checks[i].event, checks[i].feature, checks[i].hits, decisions[i].allowed,
                           decisions[i].at);
    }
    if (options_.on_denial && !decisions[i].allowed && !decisions[i].degraded) {
      options_.on_denial(checks[i].event, checks[i].feature, decisions[i]);
    }
    shadow_denied.push_back(LetThrough(*pending.policies, checks[i].event, decisions[i]));
  }
  const Decision& binding = decisions[BindingDecision(decisions)];
  if (pending.auth) {
    HttpResponse res(allowed ? HttpStatus::kNoContent : HttpStatus::kForbidden);
    SetFields(res, DenialAnswers::Keeps(binding) ? denials_.Render(binding).fields
                                                 : RateLimitFieldsFor(binding));
    SetDegraded(res, decisions);
    return res;
  }
  HttpResponse res(allowed ? HttpStatus::kOk : HttpStatus::kTooManyRequests);
  res.Set("Content-Type", "application/json");
  std::string& body = res.body();
  if (checks.size() == 1 && DenialAnswers::Keeps(decisions[0])) {  // no token, nothing degraded
    DenialAnswers::Answer answer = denials_.Render(decisions[0]);
    body = std::move(answer.json);
    body += '\n';
    SetFields(res, std::move(answer.fields));
    return res;
  }
  const auto append = [&](size_t i) {
    AppendDecisionJson(decisions[i], shadow_denied[i], body);
    AppendSettleToken(*pending.policies, checks[i], decisions[i], body);
  };
  if (checks.size() == 1) {
    append(0);
  } else {
    body = allowed ? "{\"allowed\":true,\"checks\":[" : "{\"allowed\":false,\"checks\":[";
    for (size_t i = 0; i < decisions.size(); ++i) {
      if (i > 0) body += ',';
      append(i);
    }
    body += "]}";
  }
  body += '\n';
  SetFields(res, RateLimitFieldsFor(binding));
  SetDegraded(res, decisions);
  return res;
}

std::optional<HttpResponse> DecisionApi::Resolve(std::string_view event, std::string& feature,
                                                 Seconds* block_for) const {
  Result<Resolved> resolved = Policies()->Resolve(event, feature);
  if (!resolved.ok()) return ErrorResponse(resolved.error());
  feature = std::move(resolved->feature);
  if (block_for != nullptr) *block_for = resolved->policy.block_for;
  return std::nullopt;
}

HttpResponse DecisionApi::Count(const RequestTarget& url) const {
  Result<Query> q = ParseQuery(url);
  if (!q.ok()) return ErrorResponse(q.error());
  Seconds block_for{0};
  if (std::optional<HttpResponse> refused = Resolve(*q->event, *q->feature, &block_for)) {
    return *refused;
  }
  Result<std::vector<Window>> windows = q->windows.empty()
                                            ? Result<std::vector<Window>>(engine_.DefaultWindows())
                                            : ParseSlidingWindows(q->windows);
  if (!windows.ok()) return ErrorResponse(windows.error());
  Result<Counts> counts = engine_.Count(*q->event, *q->feature, *windows);
  if (!counts.ok()) return StoreErrorResponse(counts.error());
  json body = CountsJson(*q->event, *q->feature, *counts);
  if (block_for > Seconds{0}) {  // the penalty, read at the counts' instant
    Result<std::optional<Instant>> until =
        engine_.BlockedUntil(*q->event, *q->feature, block_for, counts->at);
    if (!until.ok()) return StoreErrorResponse(until.error());
    body["blocked_until"] = *until ? json(ToUnix(**until)) : json(nullptr);
  }
  return JsonResponse(HttpStatus::kOk, body);
}

HttpResponse DecisionApi::InspectFeature(const RequestTarget& url) const {
  Result<Query> q = ParseQuery(url);
  if (!q.ok()) return ErrorResponse(q.error());
  if (!q->windows.empty()) {
    return ErrorResponse(HttpStatus::kBadRequest,
                         "inspect takes no window: it shows 1s 1m 1h 1d (within the retention)");
  }
  Seconds block_for{0};
  if (std::optional<HttpResponse> refused = Resolve(*q->event, *q->feature, &block_for)) {
    return *refused;
  }
  Result<Inspection> inspection =
      Inspect(engine_, *q->event, *q->feature, options_.clock->Now(), block_for);
  if (!inspection.ok()) return StoreErrorResponse(inspection.error());
  return JsonResponse(HttpStatus::kOk, InspectionJson(*q->event, *q->feature, *inspection));
}

std::optional<HttpResponse> DecisionApi::RefuseAdmin(const HttpRequest& request) const {
  if (!options_.admin) {
    return ErrorResponse(HttpStatus::kForbidden,
                         "admin calls are turned off on this server (hourglass serve --no-admin)");
  }
  if (!options_.admin_token) return std::nullopt;
  const std::string* header = request.Find("Authorization");
  if (header == nullptr || !BearerTokenMatches(*header, *options_.admin_token)) {
    HttpResponse res = ErrorResponse(HttpStatus::kUnauthorized,
                                     "admin calls need \"Authorization: Bearer <token>\"");
    res.Set("WWW-Authenticate", "Bearer");
    return res;
  }
  return std::nullopt;
}

HttpResponse DecisionApi::Top(const HttpRequest& request, const RequestTarget& url) const {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return std::move(*refused);
  if (options_.top == nullptr) {
    return ErrorResponse(HttpStatus::kNotFound, "this server keeps no top (--top-capacity 0)");
  }
  Result<std::string> view = TopView(*options_.top, *Policies(), url.params, options_.clock->Now());
  if (!view.ok()) return ErrorResponse(view.error());
  return JsonText(HttpStatus::kOk, std::move(*view));
}

HttpResponse DecisionApi::Hit(const HttpRequest& request) const {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return std::move(*refused);
  Result<CheckBody> hit = ParseHitBody(request.body());
  if (!hit.ok()) return ErrorResponse(hit.error());
  if (std::optional<HttpResponse> refused = Resolve(hit->event, hit->feature)) return *refused;
  Result<Cost> cost = engine_.Record(hit->event, hit->feature, hit->cost);
  if (!cost.ok()) return StoreErrorResponse(cost.error());
  return JsonResponse(
      HttpStatus::kOk,
      json{{"recorded", true}, {"cost", hit->cost}, {"keys_written", cost->keys_written}});
}

void DecisionApi::AppendSettleToken(const PolicySource& policies, const OwnedCheck& check,
                                    const Decision& decision, std::string& body) const {
  if (!decision.allowed || !decision.recorded || decision.degraded ||
      !policies.Settles(check.event)) {
    return;
  }
  const std::string token =
      options_.settle_tokens->Issue(SettleClaim{check.event, check.feature, decision.at, check.hits,
                                                decision.at + options_.settle_within, ""});
  body.pop_back();  // the decision object's '}'; the token is URL-safe base64, no escaping
  body += ",\"settle_token\":\"" + token + "\"}";
}

HttpResponse DecisionApi::Settle(const HttpRequest& request) const {
  Result<SettleBody> settle = ParseSettleBody(request.body());
  if (!settle.ok()) return ErrorResponse(settle.error());
  const Instant now = options_.clock->Now();
  Result<SettleClaim> claim = options_.settle_tokens->Verify(settle->token, now);
  if (!claim.ok()) return ErrorResponse(claim.error());
  if (!Policies()->Settles(claim->event)) {
    return ErrorResponse(HttpStatus::kBadRequest,
                         fmt::format("event {} takes no settlements: its policy needs settle: true",
                                     Dump(json(claim->event))));
  }
  // The mark outlives the token, so a replay is told as one as long as it could be accepted.
  const Engine::Once once{claim->id, claim->expires - now + Seconds{60}};
  Result<Engine::Settlement> settled =
      engine_.Settle(claim->event, claim->feature, claim->at, claim->cost, settle->actual, once);
  if (!settled.ok()) return StoreErrorResponse(settled.error());  // 400 for a bad "at"
  if (settled->replayed) {
    return JsonResponse(HttpStatus::kConflict,
                        json{{"settled", false},
                             {"replayed", true},
                             {"error",
                              "this decision was settled already: a settlement applies "
                              "once, and this one changed nothing"}});
  }
  const int64_t delta = settled->delta;
  if (options_.metrics != nullptr) options_.metrics->CountSettlement(claim->event, delta);
  if (options_.top != nullptr && delta > 0) {
    options_.top->Record(claim->event, claim->feature, static_cast<uint64_t>(delta), true,
                         claim->at);
  }
  return JsonResponse(HttpStatus::kOk, json{{"settled", true},
                                            {"at", ToUnix(claim->at)},
                                            {"cost", claim->cost},
                                            {"actual", settle->actual},
                                            {"delta", delta},
                                            {"keys_written", settled->cost.keys_written}});
}

HttpResponse DecisionApi::Reset(const HttpRequest& request, const RequestTarget& url) const {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return std::move(*refused);
  Result<Query> q = ParseQuery(url);
  if (!q.ok()) return ErrorResponse(q.error());
  if (!q->windows.empty()) return ErrorResponse(HttpStatus::kBadRequest, "reset takes no window");
  Seconds block_for{0};
  if (std::optional<HttpResponse> refused = Resolve(*q->event, *q->feature, &block_for)) {
    return *refused;
  }
  Result<Engine::ResetOutcome> reset =
      engine_.Reset(*q->event, *q->feature, std::nullopt, block_for);  // lifts a penalty too
  if (!reset.ok()) return StoreErrorResponse(reset.error());
  return JsonResponse(HttpStatus::kOk, json{{"deleted", reset->deleted}});
}

HttpResponse DecisionApi::Ready() const {
  const Window second = *Window::Sliding(Seconds{1});
  Result<Counts> probe = engine_.Count("hourglass", "readyz", {&second, 1});
  if (!probe.ok()) {
    return ErrorResponse(HttpStatus::kServiceUnavailable,
                         fmt::format("the store cannot be reached: {}", probe.error().message()));
  }
  if (options_.health != nullptr) {
    if (std::optional<std::string> why = options_.health->Why()) {
      return ErrorResponse(HttpStatus::kServiceUnavailable,
                           fmt::format("the store takes no new counts: {}", *why));
    }
  }
  return JsonResponse(HttpStatus::kOk, json{{"status", "ready"}});
}

}  // namespace hourglass
