// Keys read per query, as the engine's own cost report counts them, over every second of a day:
// a 24 h window at the current time (open buckets), at a past time (one hour back), and a check
// of `2/s, 5/m, 10/h, 100/d`; for the exact covers and for the hot path. In-memory store: keys
// read do not depend on the store.
//
//   keys_report [STEP_SECONDS]   (default 1: all 86,400 instants)
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "hourglass/engine.h"
#include "hourglass/memory_store.h"

using namespace hourglass;

namespace {

void Report(const char* what, std::vector<uint64_t> keys) {
  std::sort(keys.begin(), keys.end());
  const double mean = static_cast<double>(std::accumulate(keys.begin(), keys.end(), uint64_t{0})) /
                      static_cast<double>(keys.size());
  fmt::print("| {} | {} | {} | {:.1f} | {} | {} |\n", what, keys.front(), keys[keys.size() / 2],
             mean, keys[keys.size() * 99 / 100], keys.back());
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t step = argc > 1 ? std::max(1L, std::atol(argv[1])) : 1;
  const int64_t day_start = 1'431'820'800;  // 2015-05-17 00:00 UTC
  ManualClock clock(FromUnix(day_start));
  MemoryStore store(clock);
  std::vector<std::pair<const char*, EngineOptions>> configs;
  EngineOptions exact;  // every query reads its exact cover: no bounds, no cache
  exact.hot_path = HotPathOptions::Off();
  exact.exact_retry_after = false;  // a check reads its cover only, denied or not
  EngineOptions greedy = exact;
  greedy.cover.complements = false;
  configs.emplace_back("greedy cover", greedy);
  configs.emplace_back("cover with complements", exact);
  configs.emplace_back(
      "hot path (defaults: bounds, bucket cache; one feature "
      "queried every second, so mostly denied)",
      EngineOptions{});
  const Window day = *Window::Sliding(Seconds{86400});
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d"), CountingMode::kAdmitted,
                      FailureMode::kFailOpen};
  fmt::print("Keys read per query, default ladder 1s,1m,1h, every {} s of a day\n\n", step);
  fmt::print("| query | min | median | mean | p99 | max |\n|---|---|---|---|---|---|\n");
  for (const auto& [name, options] : configs) {
    const Engine engine = *Engine::Create(store, clock, options);
    std::vector<uint64_t> live, past, check;
    for (int64_t t = day_start; t < day_start + 86400; t += step) {
      clock.Set(FromUnix(t));
      live.push_back(engine.Count("e", "f", {&day, 1})->cost.keys_read);
      past.push_back(engine.Count("e", "f", {&day, 1}, FromUnix(t - 3600))->cost.keys_read);
      check.push_back(engine.Check("e", "f", policy)->cost.keys_read);
    }
    Report(fmt::format("24 h window at now, {}", name).c_str(), live);
    Report(fmt::format("24 h window 1 h in the past, {}", name).c_str(), past);
    Report(fmt::format("check 2/s,5/m,10/h,100/d at now, {}", name).c_str(), check);
  }
  return 0;
}
