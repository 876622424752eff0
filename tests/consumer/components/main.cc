// One decision path through the installed package: a policy file's entry, the engine on the
// in-memory store, the decision as JSON. Exits 0 when the banned address is denied and an
// ordinary one allowed.
//   components_consumer POLICY_FILE
#include <cstdio>

#include "hourglass/engine.h"
#include "hourglass/json.h"
#include "hourglass/policy_source.h"
#include "hourglass/store_factory.h"

using namespace hourglass;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  Result<PolicySource> source = PolicySource::FromFile(argv[1]);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.error().message().c_str());
    return 2;
  }
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<Store> store = std::move(*OpenStore("memory://", clock));
  const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
  bool ok = true;
  for (const char* feature : {"192.0.2.1", "203.0.113.66"}) {
    const Policy policy = *source->For("url_shorten", feature);
    const Decision d = *engine.Check("url_shorten", feature, policy);
    std::printf("%s %s\n", feature, Dump(DecisionJson(d)).c_str());
    ok = ok && d.allowed == (std::string_view(feature) == "192.0.2.1");
  }
  return ok ? 0 : 1;
}
