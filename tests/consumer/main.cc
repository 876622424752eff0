// Counts and checks through the installed package: a manual clock, the store factory's in-memory
// store, and the engine. Exits 0 when every answer is what a sliding window must give.
#include <cstdio>

#include "hourglass/engine.h"
#include "hourglass/store_factory.h"

using namespace hourglass;

int main() {
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<Store> store = std::move(*OpenStore("memory://", clock));
  const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
  const Policy policy{.limits = *ParseLimits("2/m")};
  int allowed = 0;
  for (int i = 0; i < 3; ++i) allowed += engine.Check("signup", "ann@example.com", policy)->allowed;
  clock.Advance(Seconds{60});
  const bool free_again = engine.Check("signup", "ann@example.com", policy)->allowed;
  const Window minute = *Window::Sliding(Seconds{60});
  const uint64_t count = engine.Count("signup", "ann@example.com", {&minute, 1})->windows[0].count;
  std::printf("allowed %d of 3, free again after a minute: %s, count %llu\n", allowed,
              free_again ? "yes" : "no", static_cast<unsigned long long>(count));
  return allowed == 2 && free_again && count == 1 ? 0 : 1;
}
