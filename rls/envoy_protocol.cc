#include "hourglass/envoy_protocol.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <mutex>

#include "hourglass/envoy_service.h"

namespace hourglass {
namespace {

Result<EnvoyConfig> LoadConfig(const std::vector<std::string>& paths, Seconds retention) {
  Result<EnvoyConfig> config = EnvoyConfig::Load(paths);
  if (!config.ok()) return config;
  if (Status s = config->CheckWindows(retention); !s.ok()) return s.error();
  return config;
}

class Envoy final : public ServiceProtocol {
 public:
  Envoy(EnvoyProtocolOptions options, Seconds retention)
      : options_(std::move(options)), retention_(retention) {}

  Status Start(const ProtocolContext& context, EnvoyConfig config) {
    auto shared = std::make_shared<const EnvoyConfig>(std::move(config));
    service_ = std::make_unique<EnvoyService>(context.engine, shared, options_.envoy,
                                              &context.metrics, &context.front_end, context.top);
    GrpcServerOptions grpc = options_.grpc;
    grpc.on_connection_event = [metrics = &context.metrics](ConnectionEvent e) {
      metrics->CountConnection("grpc", e);
    };
    Result<std::unique_ptr<GrpcServer>> endpoint = service_->Listen(grpc);
    if (!endpoint.ok()) return endpoint.error();
    endpoint_ = std::move(*endpoint);
    context.log(LogLevel::kInfo,
                fmt::format("gRPC rate limit service listening on {}:{} (at most {} connections); "
                            "domains {}",
                            grpc.host, endpoint_->port(), grpc.max_connections,
                            fmt::join(shared->domains(), ", ")));
    return {};
  }

  bool Serves(Endpoint endpoint) const override { return endpoint == Endpoint::kEnvoyJson; }
  void HandleHttp(const HttpRequest& request, HttpResponder respond) override {
    service_->HandleJson(request, std::move(respond));
  }
  Result<Reloaded> PrepareReload() override {
    Result<EnvoyConfig> config = LoadConfig(options_.config, retention_);
    if (!config.ok()) return config.error();
    auto shared = std::make_shared<const EnvoyConfig>(std::move(*config));
    return Reloaded{
        fmt::format("reloaded Envoy configuration {}: domains {}", fmt::join(options_.config, " "),
                    fmt::join(shared->domains(), ", ")),
        [this, shared] { service_->SetConfig(shared); }};
  }
  // Stops accepting, then gives calls in flight 5 s; once.
  void Stop() override {
    std::lock_guard lock(stop_mu_);
    endpoint_.reset();
  }

 private:
  const EnvoyProtocolOptions options_;
  const Seconds retention_;
  std::unique_ptr<EnvoyService> service_;
  std::mutex stop_mu_;
  std::unique_ptr<GrpcServer> endpoint_;  // guarded by stop_mu_ once started
};

}  // namespace

ProtocolFactory EnvoyProtocol(EnvoyProtocolOptions options) {
  return [options = std::move(options)](
             const ProtocolContext& context) -> Result<std::unique_ptr<ServiceProtocol>> {
    const Seconds retention = context.engine.options().retention;
    Result<EnvoyConfig> config = LoadConfig(options.config, retention);
    if (!config.ok()) return config.error();
    auto envoy = std::make_unique<Envoy>(options, retention);
    if (Status s = envoy->Start(context, std::move(*config)); !s.ok()) return s.error();
    return std::unique_ptr<ServiceProtocol>(std::move(envoy));
  };
}

}  // namespace hourglass
