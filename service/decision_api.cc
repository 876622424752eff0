#include "hourglass/decision_api.h"

#include <fmt/format.h>

#include <boost/url/parse.hpp>
#include <boost/url/src.hpp>  // Boost.URL compiled here, header-only: Debian ships no library
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "hourglass/inspection.h"
#include "hourglass/json.h"
#include "hourglass/ratelimit_headers.h"

namespace hourglass {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

HttpResponse JsonResponse(http::status status, const json& body) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = Dump(body) + "\n";
  return res;
}

HttpResponse ErrorResponse(http::status status, const std::string& message) {
  return JsonResponse(status, json{{"error", message}});
}

http::status StatusFor(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kInvalidArgument:
      return http::status::bad_request;
    case ErrorCode::kNotFound:
      return http::status::not_found;
    default:
      return http::status::service_unavailable;
  }
}

HttpResponse ErrorResponse(const Error& e) { return ErrorResponse(StatusFor(e), e.message()); }

void SetDecisionFields(HttpResponse& res, const Decision& d) {
  const RateLimitFields fields = RateLimitFieldsFor(d);
  if (!fields.policy.empty()) res.set("RateLimit-Policy", fields.policy);
  if (!fields.current.empty()) res.set("RateLimit", fields.current);
  if (fields.retry_after) res.set(http::field::retry_after, *fields.retry_after);
}

struct HitRequest {
  std::string event;
  std::string feature;
  uint64_t cost = 1;
};

// One {"event","feature","cost"} object; `where` names it in errors ("checks[2]: ...").
Result<HitRequest> ParseHit(const json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + "expected a JSON object");
  HitRequest hit;
  const auto event = j.find("event");
  if (event == j.end() || !event->is_string() || event->get_ref<const std::string&>().empty()) {
    return InvalidArgument(where + "\"event\" must be a non-empty string");
  }
  hit.event = event->get<std::string>();
  const auto feature = j.find("feature");
  if (feature == j.end() || !feature->is_string()) {
    return InvalidArgument(where + "\"feature\" must be a string");
  }
  hit.feature = feature->get<std::string>();
  if (const auto cost = j.find("cost"); cost != j.end()) {
    if (!cost->is_number_unsigned() || cost->get<uint64_t>() < 1 ||
        cost->get<uint64_t>() > kMaxHitsPerCall) {
      return InvalidArgument(
          fmt::format("{}\"cost\" must be a whole number from 1 to {}", where, kMaxHitsPerCall));
    }
    hit.cost = cost->get<uint64_t>();
  }
  return hit;
}

Result<json> ParseBody(const HttpRequest& request) {
  json body = json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return InvalidArgument(
        "the request body is not valid JSON (UTF-8, with \\u escapes for any "
        "other bytes)");
  }
  return body;
}

Result<std::vector<HitRequest>> ParseChecks(const HttpRequest& request, size_t max) {
  Result<json> body = ParseBody(request);
  if (!body.ok()) return body.error();
  std::vector<HitRequest> checks;
  const auto list = body->is_object() ? body->find("checks") : body->end();
  if (!body->is_object() || list == body->end()) {
    Result<HitRequest> one = ParseHit(*body, "");
    if (!one.ok()) return one.error();
    checks.push_back(std::move(*one));
    return checks;
  }
  if (!list->is_array() || list->empty() || list->size() > max) {
    return InvalidArgument(fmt::format("\"checks\" must be a list of 1 to {} checks", max));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Result<HitRequest> one = ParseHit((*list)[i], fmt::format("checks[{}]: ", i));
    if (!one.ok()) return one.error();
    checks.push_back(std::move(*one));
  }
  return checks;
}

// The query parameters of a request target, decoded.
struct Query {
  std::optional<std::string> event, feature;
  std::vector<std::string> windows;
};

Result<Query> ParseQuery(const boost::urls::url_view& url) {
  Query q;
  for (const auto& param : url.params()) {
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

// The decision's JSON; for a shadow denial let through, "shadow_denied": true says so.
json ShownJson(const Decision& d, bool shadow_denied) {
  json j = DecisionJson(d);
  if (shadow_denied) j["shadow_denied"] = true;
  return j;
}

HttpResponse MethodNotAllowed(std::string_view allow) {
  HttpResponse res = ErrorResponse(http::status::method_not_allowed,
                                   fmt::format("method not allowed here: use {}", allow));
  res.set(http::field::allow, allow);
  return res;
}

}  // namespace

DecisionApi::DecisionApi(const Engine& engine, std::shared_ptr<const PolicySource> policies,
                         DecisionApiOptions options)
    : engine_(engine), options_(std::move(options)), policies_(std::move(policies)) {}

void DecisionApi::SetPolicies(std::shared_ptr<const PolicySource> policies) {
  std::lock_guard lock(mu_);
  policies_ = std::move(policies);
}

std::shared_ptr<const PolicySource> DecisionApi::Policies() const {
  std::lock_guard lock(mu_);
  return policies_;
}

void DecisionApi::CountReload(bool ok) const {
  if (options_.metrics != nullptr) options_.metrics->CountReload(ok);
}

HttpResponse DecisionApi::StoreErrorResponse(const Error& e) const {
  const http::status status = StatusFor(e);
  if (status == http::status::service_unavailable && options_.metrics != nullptr) {
    options_.metrics->CountStoreError(e);
  }
  return ErrorResponse(status, e.message());
}

HttpResponse DecisionApi::Handle(const HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  boost::system::result<boost::urls::url_view> url =
      boost::urls::parse_origin_form(request.target());
  if (!url) return ErrorResponse(http::status::bad_request, "malformed request target");
  HttpResponse response = Route(request, *url);
  if (options_.metrics != nullptr) {
    static const std::set<std::string, std::less<>> kEndpoints = {
        "/v1/check",    "/v1/count", "/v1/inspect", "/v1/hit",
        "/v1/counters", "/healthz",  "/readyz",     "/metrics"};
    const std::string path = url->path();
    const std::string endpoint = kEndpoints.contains(path)       ? path
                                 : path.starts_with("/v1/auth/") ? "/v1/auth"
                                                                 : "other";
    options_.metrics->ObserveRequest(endpoint, std::chrono::steady_clock::now() - start);
  }
  return response;
}

HttpResponse DecisionApi::Route(const HttpRequest& request,
                                const boost::urls::url_view& url) const {
  const std::string path = url.path();
  const http::verb method = request.method();
  const auto only = [&](http::verb allowed, std::string_view name, auto answer) -> HttpResponse {
    return method == allowed ? answer() : MethodNotAllowed(name);
  };
  if (path == "/v1/check") return only(http::verb::post, "POST", [&] { return Check(request); });
  if (path == "/v1/count") return only(http::verb::get, "GET", [&] { return Count(url); });
  if (path == "/v1/inspect") {
    return only(http::verb::get, "GET", [&] { return InspectFeature(url); });
  }
  if (path == "/v1/hit") return only(http::verb::post, "POST", [&] { return Hit(request); });
  if (path == "/v1/counters") {
    return only(http::verb::delete_, "DELETE", [&] { return Reset(request, url); });
  }
  if (path.starts_with("/v1/auth/") && path.size() > 9) {
    const std::string event = path.substr(9);
    return only(http::verb::get, "GET", [&] { return Auth(request, event); });
  }
  if (path == "/healthz") {
    return only(http::verb::get, "GET", [&] {
      return JsonResponse(http::status::ok, json{{"status", "alive"}});
    });
  }
  if (path == "/readyz") return only(http::verb::get, "GET", [&] { return Ready(); });
  if (path == "/metrics" && options_.metrics != nullptr) {
    return only(http::verb::get, "GET", [&] {
      HttpResponse res{http::status::ok, 11};
      res.set(http::field::content_type, "text/plain; version=0.0.4");
      res.body() = options_.metrics->Render();
      return res;
    });
  }
  return ErrorResponse(http::status::not_found, "no such endpoint: see `hourglass serve --help`");
}

Result<Decision> DecisionApi::Decide(const PolicySource& policies, std::string_view event,
                                     std::string_view feature, const Policy& policy, uint64_t cost,
                                     bool& shadow_denied) const {
  Result<Decision> d = engine_.Check(event, feature, policy, cost);
  if (!d.ok()) return d;
  const bool shadow = policies.IsShadow(event);
  if (options_.metrics != nullptr) options_.metrics->CountDecision(event, *d, shadow);
  shadow_denied = shadow && !d->allowed;
  if (shadow_denied) {  // let through: allowed, nothing to wait for
    d->allowed = true;
    d->retry_after = Seconds{0};
  }
  return d;
}

HttpResponse DecisionApi::Check(const HttpRequest& request) const {
  Result<std::vector<HitRequest>> checks = ParseChecks(request, options_.max_checks_per_request);
  if (!checks.ok()) return ErrorResponse(checks.error());
  const std::shared_ptr<const PolicySource> policies = Policies();
  std::vector<Policy> resolved;
  for (const HitRequest& c : *checks) {
    Result<Policy> policy = policies->For(c.event, c.feature);
    if (!policy.ok()) return ErrorResponse(policy.error());
    resolved.push_back(std::move(*policy));
  }
  // In order; the first denial ends it, and (admitted mode) the admitted ones are taken back.
  std::vector<Decision> decisions;
  std::vector<bool> shadow_denied;
  bool allowed = true;
  for (size_t i = 0; i < checks->size() && allowed; ++i) {
    const HitRequest& c = (*checks)[i];
    bool shadowed = false;
    Result<Decision> d = Decide(*policies, c.event, c.feature, resolved[i], c.cost, shadowed);
    if (!d.ok()) return ErrorResponse(d.error());
    shadow_denied.push_back(shadowed);
    allowed = d->allowed;
    decisions.push_back(std::move(*d));
  }
  if (!allowed) {
    for (size_t i = 0; i + 1 < decisions.size(); ++i) {
      const HitRequest& c = (*checks)[i];
      if (resolved[i].mode != CountingMode::kAdmitted || !decisions[i].recorded) continue;
      decisions[i].recorded = !engine_.Unrecord(c.event, c.feature, c.cost, decisions[i].at).ok();
    }
  }
  const Decision& shown = allowed ? decisions.front() : decisions.back();
  json body;
  if (checks->size() == 1) {
    body = ShownJson(shown, shadow_denied.front());
  } else {
    body = json{{"allowed", allowed}, {"checks", json::array()}};
    for (size_t i = 0; i < decisions.size(); ++i) {
      body["checks"].push_back(ShownJson(decisions[i], shadow_denied[i]));
    }
  }
  HttpResponse res =
      JsonResponse(allowed ? http::status::ok : http::status::too_many_requests, body);
  SetDecisionFields(res, shown);
  return res;
}

HttpResponse DecisionApi::Count(const boost::urls::url_view& url) const {
  Result<Query> q = ParseQuery(url);
  if (!q.ok()) return ErrorResponse(q.error());
  if (q->windows.empty()) q->windows = {"1s", "1m", "1h", "1d"};
  Result<std::vector<Window>> windows = ParseSlidingWindows(q->windows);
  if (!windows.ok()) return ErrorResponse(windows.error());
  Result<Counts> counts = engine_.Count(*q->event, *q->feature, *windows);
  if (!counts.ok()) return StoreErrorResponse(counts.error());
  return JsonResponse(http::status::ok, CountsJson(*q->event, *q->feature, *counts));
}

HttpResponse DecisionApi::InspectFeature(const boost::urls::url_view& url) const {
  Result<Query> q = ParseQuery(url);
  if (!q.ok()) return ErrorResponse(q.error());
  if (!q->windows.empty()) {
    return ErrorResponse(http::status::bad_request,
                         "inspect takes no window: it shows 1s 1m 1h 1d");
  }
  Result<Inspection> inspection = Inspect(engine_, *q->event, *q->feature, options_.clock->Now());
  if (!inspection.ok()) return StoreErrorResponse(inspection.error());
  return JsonResponse(http::status::ok, InspectionJson(*q->event, *q->feature, *inspection));
}

std::optional<HttpResponse> DecisionApi::RefuseAdmin(const HttpRequest& request) const {
  if (!options_.admin) {
    return ErrorResponse(http::status::forbidden,
                         "admin calls are turned off on this server (hourglass serve --no-admin)");
  }
  if (!options_.admin_token) return std::nullopt;
  const auto header = request.find(http::field::authorization);
  if (header == request.end() || header->value() != "Bearer " + *options_.admin_token) {
    HttpResponse res = ErrorResponse(http::status::unauthorized,
                                     "admin calls need \"Authorization: Bearer <token>\"");
    res.set(http::field::www_authenticate, "Bearer");
    return res;
  }
  return std::nullopt;
}

HttpResponse DecisionApi::Hit(const HttpRequest& request) const {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return std::move(*refused);
  Result<json> body = ParseBody(request);
  if (!body.ok()) return ErrorResponse(body.error());
  Result<HitRequest> hit = ParseHit(*body, "");
  if (!hit.ok()) return ErrorResponse(hit.error());
  Result<Cost> cost = engine_.Record(hit->event, hit->feature, hit->cost);
  if (!cost.ok()) return StoreErrorResponse(cost.error());
  return JsonResponse(
      http::status::ok,
      json{{"recorded", true}, {"cost", hit->cost}, {"keys_written", cost->keys_written}});
}

HttpResponse DecisionApi::Reset(const HttpRequest& request,
                                const boost::urls::url_view& url) const {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return std::move(*refused);
  Result<Query> q = ParseQuery(url);
  if (!q.ok()) return ErrorResponse(q.error());
  if (!q->windows.empty()) return ErrorResponse(http::status::bad_request, "reset takes no window");
  Result<Engine::ResetOutcome> reset = engine_.Reset(*q->event, *q->feature);
  if (!reset.ok()) return StoreErrorResponse(reset.error());
  return JsonResponse(http::status::ok, json{{"deleted", reset->deleted}});
}

HttpResponse DecisionApi::Auth(const HttpRequest& request, std::string_view event) const {
  const auto header = request.find(options_.feature_header);
  if (header == request.end()) {
    return ErrorResponse(http::status::bad_request,
                         fmt::format("header {} is missing: the proxy must set it to the feature",
                                     options_.feature_header));
  }
  const std::string feature(header->value());
  const std::shared_ptr<const PolicySource> policies = Policies();
  Result<Policy> policy = policies->For(event, feature);
  if (!policy.ok()) return ErrorResponse(policy.error());
  bool shadowed = false;
  Result<Decision> d = Decide(*policies, event, feature, *policy, 1, shadowed);
  if (!d.ok()) return ErrorResponse(d.error());
  HttpResponse res{d->allowed ? http::status::no_content : http::status::forbidden, 11};
  SetDecisionFields(res, *d);
  return res;
}

HttpResponse DecisionApi::Ready() const {
  const Window second = *Window::Sliding(Seconds{1});
  Result<Counts> probe = engine_.Count("hourglass", "readyz", {&second, 1});
  if (!probe.ok()) {
    return ErrorResponse(http::status::service_unavailable,
                         fmt::format("the store cannot be reached: {}", probe.error().message()));
  }
  return JsonResponse(http::status::ok, json{{"status", "ready"}});
}

}  // namespace hourglass
