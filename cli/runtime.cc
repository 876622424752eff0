#include "runtime.h"

#include <fmt/format.h>

#include <cstdio>

#include "hourglass/store_factory.h"

namespace hourglass::cli {
namespace {

std::unique_ptr<Store> OpenCliStore(const Globals& g, const Clock& clock,
                                    ServerTransitionHandler on_transition) {
  if (g.timeout_ms < 1 || g.timeout_ms > 600000) {
    Fail(kUsage, fmt::format("--timeout-ms {}: must be 1 to 600000", g.timeout_ms));
  }
  MemcachedOptions options;
  options.connect_timeout = std::chrono::milliseconds{g.timeout_ms};
  options.io_timeout = std::chrono::milliseconds{g.timeout_ms};
  options.layout = Unwrap(ParseLayout(g.layout));
  options.read_both_layouts = g.read_both_layouts;
  options.on_transition = std::move(on_transition);
  // The memory store expires keys on the engine's clock (a replay's time); memcached lives in
  // real time, so its absolute TTLs and failure windows come from the real clock.
  if (g.store == "memory" && !g.previous_servers.empty()) {
    Fail(kUsage, "--previous-servers belongs to --store memcached");
  }
  if (g.store == "memory") return Unwrap(OpenStore("memory://", clock));
  const std::vector<std::string> servers = Unwrap(ParseServers(g.servers));
  for (const std::string& warning : SameServerWarnings(servers)) {
    std::fprintf(stderr, "hourglass: warning: %s\n", warning.c_str());
  }
  if (!g.previous_servers.empty()) {
    const Result<std::vector<std::string>> previous = ParseServers(g.previous_servers);
    if (!previous.ok()) Fail(kUsage, "--previous-servers: " + previous.error().message());
  }
  return Unwrap(
      OpenStore("memcached://" + g.servers, SystemClock::Get(), options, g.previous_servers));
}

EngineOptions EngineOptionsFor(const Globals& g, EngineUse use) {
  EngineOptions options;
  options.name_space = g.name_space;
  options.retention = RetentionOf(g);
  options.settle_margin = SettleMarginOf(g);
  options.exact_retry_after =
      use == EngineUse::kOneShotExact || use == EngineUse::kLongRunningExact;
  const bool long_running = use == EngineUse::kLongRunning || use == EngineUse::kLongRunningExact;
  options.hot_path = long_running ? HotPathOptions::LongRunning() : HotPathOptions::OneShot();
  if (g.exact_cover) options.hot_path = HotPathOptions::Off();
  return options;
}

}  // namespace

size_t StoreConnections(const Globals& g) {
  if (g.store == "memory") return 0;
  const Result<std::vector<std::string>> servers = ParseServers(g.servers);
  const Result<std::vector<std::string>> previous =
      g.previous_servers.empty() ? Result<std::vector<std::string>>(std::vector<std::string>{})
                                 : ParseServers(g.previous_servers);
  const size_t count =
      (servers.ok() ? servers->size() : 0) + (previous.ok() ? previous->size() : 0);
  return count * MemcachedOptions{}.pool_size;
}

Runtime::Runtime(const Globals& g, const Clock& clock, EngineUse use,
                 ServerTransitionHandler on_transition)
    : store_(OpenCliStore(g, clock, std::move(on_transition))) {
  engine_.emplace(Unwrap(Engine::Create(*store_, clock, EngineOptionsFor(g, use))));
}

}  // namespace hourglass::cli
