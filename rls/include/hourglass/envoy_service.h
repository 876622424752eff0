// Envoy's rate limit service on the engine: ShouldRateLimit over gRPC
// (envoy.service.ratelimit.v3.RateLimitService) and the same request as JSON (POST /json, the
// protobuf JSON mapping; 200 OK, 429 OVER_LIMIT, 400 for a bad request).
//
//   EnvoyService rls(engine, config, options, &metrics);
//   Result<std::unique_ptr<GrpcServer>> grpc = rls.Listen({.host = "127.0.0.1", .port = 8081});
//   http handler: if (request.target() == "/json") rls.HandleJson(std::move(request), respond);
//
// Checks go through a CheckFrontEnd (its own, or the one the service's HTTP API shares):
// requests arriving while others are at the store share its round trips. A bad request is
// INVALID_ARGUMENT (gRPC) or 400 (JSON) naming the problem.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "hourglass/check_front_end.h"
#include "hourglass/envoy_config.h"
#include "hourglass/envoy_request.h"
#include "hourglass/grpc_server.h"
#include "hourglass/http_server.h"
#include "hourglass/recent_top.h"
#include "hourglass/service_metrics.h"

namespace hourglass {

class EnvoyService {
 public:
  // `engine`, `metrics` (may be null), `front_end` (null: the service makes its own) and `top`
  // (may be null; else every decided descriptor is ranked there under its event, as /v1/check's
  // checks are) must outlive this.
  EnvoyService(const Engine& engine, std::shared_ptr<const EnvoyConfig> config,
               EnvoyOptions options, ServiceMetrics* metrics, CheckFrontEnd* front_end = nullptr,
               RecentTop* top = nullptr);
  ~EnvoyService();
  EnvoyService(const EnvoyService&) = delete;
  EnvoyService& operator=(const EnvoyService&) = delete;

  // Decides `request`; `done` is called once and must not block, on a thread as
  // CheckFrontEnd::Submit calls its own.
  void ShouldRateLimit(const RateLimitRequest& request,
                       std::function<void(Result<RateLimitResponse>)> done);
  // POST /json.
  void HandleJson(const HttpRequest& request, HttpResponder respond);
  // A gRPC server for ShouldRateLimit
  // (/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) on the options' address (port 0:
  // a free one, see port()), capped at their max_connections; its idle and keep-alive limits are
  // GrpcServerOptions'. A message that is not a RateLimitRequest is INVALID_ARGUMENT. kUnavailable
  // when it cannot listen. Destroy it before this service.
  Result<std::unique_ptr<GrpcServer>> Listen(GrpcServerOptions options);
  // Requests after this call use `config`.
  void SetConfig(std::shared_ptr<const EnvoyConfig> config);

 private:
  // Ranks the request's decided descriptors in top_.
  void Rank(const std::vector<OwnedCheck>& checks, const Engine::RequestDecision& decided) const;
  std::shared_ptr<const EnvoyConfig> Config() const;

  const EnvoyOptions options_;
  ServiceMetrics* const metrics_;
  mutable std::mutex mu_;
  std::shared_ptr<const EnvoyConfig> config_;  // guarded by mu_
  // Last: destroyed first, it waits for the requests in flight, whose answers use the above.
  std::unique_ptr<CheckFrontEnd> own_front_end_;  // when none was given
  CheckFrontEnd& front_end_;
  RecentTop* top_;
};

}  // namespace hourglass
