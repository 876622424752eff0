#include "hourglass/envoy_service.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "hourglass/request_body.h"

namespace hourglass {
namespace {

// A request larger than this is refused (RESOURCE_EXHAUSTED) before it is read.
constexpr int kMaxRequestBytes = 1 << 20;

HttpResponse JsonResponse(HttpStatus status, std::string body) {
  HttpResponse res(status, std::move(body));
  res.Set("Content-Type", "application/json");
  return res;
}

HttpResponse JsonError(HttpStatus status, const std::string& message) {
  return JsonResponse(status, nlohmann::json{{"error", message}}.dump());
}

HttpResponse JsonAnswer(const Result<RateLimitResponse>& answer) {
  if (!answer.ok()) return JsonError(HttpStatus::kBadRequest, answer.error().message());
  std::string body;
  if (!google::protobuf::util::MessageToJsonString(*answer, &body).ok()) {
    return JsonError(HttpStatus::kInternalServerError, "the response cannot be written as JSON");
  }
  return JsonResponse(answer->overall_code() == RateLimitResponse::OVER_LIMIT
                          ? HttpStatus::kTooManyRequests
                          : HttpStatus::kOk,
                      std::move(body));
}

}  // namespace

EnvoyService::EnvoyService(const Engine& engine, std::shared_ptr<const EnvoyConfig> config,
                           EnvoyOptions options, ServiceMetrics* metrics, CheckFrontEnd* front_end,
                           RecentTop* top)
    : options_(options),
      metrics_(metrics),
      config_(std::move(config)),
      own_front_end_(front_end != nullptr ? nullptr
                                          : std::make_unique<CheckFrontEnd>(engine, metrics)),
      front_end_(front_end != nullptr ? *front_end : *own_front_end_),
      top_(top) {}

EnvoyService::~EnvoyService() = default;

std::shared_ptr<const EnvoyConfig> EnvoyService::Config() const {
  std::lock_guard lock(mu_);
  return config_;
}

void EnvoyService::SetConfig(std::shared_ptr<const EnvoyConfig> config) {
  std::lock_guard lock(mu_);
  config_ = std::move(config);
}

void EnvoyService::ShouldRateLimit(const RateLimitRequest& request,
                                   std::function<void(Result<RateLimitResponse>)> done) {
  Result<EnvoyRequest> made = EnvoyRequest::Make(*Config(), request, options_);
  if (!made.ok()) return done(made.error());
  // Envoy acts on the denial alone: a request one descriptor of which is known denied needs no
  // read of the others.
  const Engine::LocalScope local = Engine::LocalScope::kAnyBindingDenial;
  if (std::optional<Engine::RequestDecision> decided =
          front_end_.DecideAtOnce(made->checks(), local)) {  // answered here, nothing carried
    if (top_ != nullptr) Rank(made->checks(), *decided);
    return done(made->Answer(std::move(*decided), metrics_));
  }
  auto plan = std::make_shared<const EnvoyRequest>(std::move(*made));
  front_end_.SubmitToStore(
      plan->checks(),
      [this, plan, done = std::move(done)](std::vector<OwnedCheck> checks,
                                           Result<Engine::RequestDecision> decided) {
        if (top_ != nullptr && decided.ok()) Rank(checks, *decided);
        done(plan->Answer(decided, metrics_));
      },
      local);
}

void EnvoyService::Rank(const std::vector<OwnedCheck>& checks,
                        const Engine::RequestDecision& decided) const {
  for (size_t i = 0; i < checks.size() && i < decided.decisions.size(); ++i) {
    const Decision& d = decided.decisions[i];
    if (!checks[i].record || d.degraded || d.unread) continue;
    top_->Record(checks[i].event, checks[i].feature, checks[i].hits, d.allowed, d.at);
  }
}

void EnvoyService::HandleJson(const HttpRequest& request, HttpResponder respond) {
  if (request.method() != HttpMethod::kPost) {
    HttpResponse res = JsonError(HttpStatus::kMethodNotAllowed, "/json takes POST");
    res.Set("Allow", "POST");
    return respond(std::move(res));
  }
  // A field given twice (protobuf takes the last) is refused as /v1 refuses it: which one a
  // proxy in front read is anyone's guess.
  if (Result<nlohmann::json> plain = ParseJsonBody(request.body()); !plain.ok()) {
    return respond(JsonError(HttpStatus::kBadRequest, plain.error().message()));
  }
  RateLimitRequest parsed;
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(request.body(), &parsed, strict);
  if (!status.ok()) {
    return respond(JsonError(HttpStatus::kBadRequest,
                             "the body is not a RateLimitRequest in JSON: " + status.ToString()));
  }
  CheckFrontEnd::Gather hand_over(front_end_, /*hand_over=*/true);  // the I/O thread goes on
  ShouldRateLimit(parsed, [respond](Result<RateLimitResponse> answer) {
    respond.Later([answer = std::move(answer)] { return JsonAnswer(answer); });
  });
}

Result<std::unique_ptr<GrpcServer>> EnvoyService::Listen(GrpcServerOptions options) {
  options.max_message_bytes = kMaxRequestBytes;
  // The calls of one read share a batch, sent by the front end's threads: the connection's thread
  // goes on reading.
  options.around_calls = [this](const std::function<void()>& calls) {
    CheckFrontEnd::Gather gather(front_end_, /*hand_over=*/true);
    calls();
  };
  GrpcServer::Methods methods;
  methods["/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"] =
      [this](std::string_view message, GrpcReply reply) {
        RateLimitRequest request;
        if (!request.ParseFromArray(message.data(), static_cast<int>(message.size()))) {
          return reply.Fail(GrpcStatus::kInvalidArgument, "the message is not a RateLimitRequest");
        }
        ShouldRateLimit(request, [reply](Result<RateLimitResponse> answer) {
          if (!answer.ok())
            return reply.Fail(GrpcStatus::kInvalidArgument, answer.error().message());
          reply.Ok(answer->SerializeAsString());
        });
      };
  return GrpcServer::Create(std::move(options), std::move(methods));
}

}  // namespace hourglass
