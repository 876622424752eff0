// The decision API from the installed package: a limit of 2 a minute checked through
// DecisionApi::Handle on the in-memory store. Exits 0 when the first two checks are allowed (200)
// and the third denied (429) with a Retry-After.
//   service_consumer
#include <cstdio>
#include <string>
#include <vector>

#include "hourglass/decision_api.h"
#include "hourglass/store_factory.h"

using namespace hourglass;

int main() {
  const std::vector<std::string> limits = {"2/m"};
  Result<PolicySource> source = PolicySource::FromLimits(limits);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.error().message().c_str());
    return 2;
  }
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<Store> store = std::move(*OpenStore("memory://", clock));
  const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
  ServiceMetrics metrics;
  DecisionApiOptions options;
  options.metrics = &metrics;
  options.clock = &clock;
  DecisionApi api(engine, std::make_shared<const PolicySource>(std::move(*source)), options);
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    const HttpRequest request(HttpMethod::kPost, "/v1/check",
                              R"({"event":"signup","feature":"ann@example.com"})");
    const HttpResponse response = api.Handle(request);
    const int status = static_cast<int>(response.status());
    std::printf("%d %s", status, response.body().c_str());
    ok = ok && status == (i < 2 ? 200 : 429);
    if (i == 2) ok = ok && response.Find("Retry-After") != nullptr;
  }
  return ok ? 0 : 1;
}
