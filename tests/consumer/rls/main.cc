// Envoy's rate limit service from the installed package: a configuration of 2 requests a minute
// per client, and three ShouldRateLimit requests decided on the in-memory store. Exits 0 when
// the first two are OK and the third OVER_LIMIT.
//   rls_consumer
#include <cstdio>

#include "hourglass/envoy_config.h"
#include "hourglass/envoy_request.h"
#include "hourglass/store_factory.h"

using namespace hourglass;

int main() {
  Result<EnvoyConfig> config = EnvoyConfig::Parse(
      "domain: edge\n"
      "descriptors:\n"
      "  - key: client\n"
      "    rate_limit: {unit: minute, requests_per_unit: 2}\n",
      "edge.yaml");
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.error().message().c_str());
    return 2;
  }
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<Store> store = std::move(*OpenStore("memory://", clock));
  const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
  RateLimitRequest request;
  request.set_domain("edge");
  auto* entry = request.add_descriptors()->add_entries();
  entry->set_key("client");
  entry->set_value("203.0.113.7");
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    Result<EnvoyRequest> made = EnvoyRequest::Make(*config, request, EnvoyOptions{});
    if (!made.ok()) return 2;
    std::vector<Engine::CheckRequest> checks = RequestsOf(made->checks());
    Result<RateLimitResponse> response = made->Answer(engine.CheckAll(checks), nullptr);
    if (!response.ok()) return 2;
    std::printf("%s\n", RateLimitResponse::Code_Name(response->overall_code()).c_str());
    ok = ok && response->overall_code() ==
                   (i < 2 ? RateLimitResponse::OK : RateLimitResponse::OVER_LIMIT);
  }
  return ok ? 0 : 1;
}
