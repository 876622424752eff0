// The engine behind Envoy's ShouldRateLimit, asked over a real gRPC channel on loopback: the
// policy becomes an Envoy configuration of one descriptor per limit (an Envoy configuration holds
// one limit per descriptor), and each request asks every descriptor with the feature as value.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <stdexcept>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "hourglass/envoy_service.h"
#include "limiters.h"

namespace hourglass::bench {
namespace {

namespace rls = envoy::service::ratelimit::v3;

std::string UnitOf(const Limit& limit) {
  switch (limit.window.length().count()) {
    case 1:
      return "second";
    case 60:
      return "minute";
    case 3600:
      return "hour";
    case 86400:
      return "day";
    default:
      throw std::invalid_argument("an Envoy unit is a second, minute, hour or day");
  }
}

std::string ConfigFor(const std::vector<Limit>& limits) {
  std::string yaml = "domain: accuracy\ndescriptors:\n";
  for (size_t i = 0; i < limits.size(); ++i) {
    yaml += "  - key: l" + std::to_string(i) +
            "\n    rate_limit:\n      unit: " + UnitOf(limits[i]) +
            "\n      requests_per_unit: " + std::to_string(limits[i].max_hits) + "\n";
  }
  return yaml;
}

class EnvoyGrpcLimiter final : public Limiter {
 public:
  EnvoyGrpcLimiter(std::string name, Store& store, ManualClock& clock, std::vector<Limit> limits,
                   const EngineOptions& options)
      : name_(std::move(name)),
        clock_(clock),
        limits_(std::move(limits)),
        engine_(*Engine::Create(store, clock, options)),
        service_(engine_,
                 std::make_shared<const EnvoyConfig>(*EnvoyConfig::Parse(ConfigFor(limits_), "")),
                 EnvoyOptions{}, nullptr) {
    Result<std::unique_ptr<GrpcServer>> endpoint =
        service_.Listen({.host = "127.0.0.1", .port = 0});
    if (!endpoint.ok()) throw std::runtime_error(endpoint.error().ToString());
    endpoint_ = std::move(*endpoint);
    stub_ = rls::RateLimitService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(endpoint_->port()), grpc::InsecureChannelCredentials()));
  }

  std::string name() const override { return name_; }

  // The answer tells a descriptor's count only as limit - limit_remaining, an upper bound (bounds
  // may settle a decision without the exact count): the low end is left at 0, so the count error
  // measures whether limit_remaining ever promised more than the truth.
  bool Decide(const Request& r, std::vector<double>& estimates,
              std::vector<double>& lows) override {
    clock_.Set(FromUnix(r.t));
    rls::RateLimitRequest request;
    request.set_domain("accuracy");
    request.set_hits_addend(static_cast<uint32_t>(r.cost));
    for (size_t i = 0; i < limits_.size(); ++i) {
      auto* entry = request.add_descriptors()->add_entries();
      entry->set_key("l" + std::to_string(i));
      entry->set_value(std::to_string(r.feature));
    }
    rls::RateLimitResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub_->ShouldRateLimit(&context, request, &response);
    if (!status.ok()) throw std::runtime_error("ShouldRateLimit: " + status.error_message());
    const bool admitted = response.overall_code() == rls::RateLimitResponse::OK;
    for (size_t i = 0; i < limits_.size(); ++i) {
      const uint64_t remaining = response.statuses(static_cast<int>(i)).limit_remaining();
      const uint64_t after = limits_[i].max_hits - std::min(remaining, limits_[i].max_hits);
      const uint64_t own = admitted ? r.cost : 0;
      estimates[i] = static_cast<double>(after - std::min(after, own));
      lows[i] = 0;
    }
    ++round_trips;
    return admitted;
  }
  uint64_t StoredKeys(int64_t) override { return 0; }

 private:
  std::string name_;
  ManualClock& clock_;
  std::vector<Limit> limits_;
  Engine engine_;
  EnvoyService service_;
  std::unique_ptr<GrpcServer> endpoint_;
  std::unique_ptr<rls::RateLimitService::Stub> stub_;
};

}  // namespace

std::unique_ptr<Limiter> MakeEnvoyGrpc(const std::string& name, Store& store, ManualClock& clock,
                                       const std::vector<Limit>& limits,
                                       const EngineOptions& options) {
  return std::make_unique<EnvoyGrpcLimiter>(name, store, clock, limits, options);
}

}  // namespace hourglass::bench
