#include "runtime.h"

#include <fmt/format.h>

#include <cstdio>

#include "hourglass/store_factory.h"

namespace hourglass::cli {

std::unique_ptr<Store> OpenCliStore(const Globals& g, const Clock& clock,
                                    ServerTransitionHandler on_transition,
                                    StoreLossHandler on_loss) {
  if (g.timeout_ms < 1 || g.timeout_ms > 600000) {
    Fail(kUsage, fmt::format("--timeout-ms {}: must be 1 to 600000", g.timeout_ms));
  }
  const std::string url = StoreUrl(g);
  StoreOptions options;
  options.network.connect_timeout = std::chrono::milliseconds{g.timeout_ms};
  options.network.io_timeout = std::chrono::milliseconds{g.timeout_ms};
  options.network.layout = Unwrap(ParseLayout(g.layout));
  options.network.read_both_layouts = g.read_both_layouts;
  options.network.write_bases = !g.no_pack_bases;
  options.network.on_transition = std::move(on_transition);
  options.network.on_loss = std::move(on_loss);
  options.previous_servers = g.previous_servers;
  options.replicas = g.replicas;
  if (const char* password = std::getenv("HOURGLASS_REDIS_PASSWORD"); password != nullptr) {
    options.redis_password = password;
  }
  // The memory store expires keys on the engine's clock (a replay's time); the network stores
  // live in real time, so their TTLs and failure windows come from the real clock.
  if (url == "memory://") return Unwrap(OpenStore(url, clock));
  // LMDB, shared with processes on the real clock, expires values on it too (as a server would).
  if (url.starts_with("memcached://")) {
    const std::string_view list = std::string_view(url).substr(12);
    const std::vector<std::string> servers =
        Unwrap(ParseServers(list.substr(0, list.find('?'))));  // ?replicas=N: OpenStore's
    for (const std::string& warning : SameServerWarnings(servers)) {
      std::fprintf(stderr, "hourglass: warning: %s\n", warning.c_str());
    }
    if (!g.previous_servers.empty()) {
      const std::string_view previous_list = g.previous_servers;
      const Result<std::vector<std::string>> previous =
          ParseServers(previous_list.substr(0, previous_list.find('?')));
      if (!previous.ok()) Fail(kUsage, "--previous-servers: " + previous.error().message());
    }
  }
  return Unwrap(OpenStore(url, SystemClock::Get(), options));
}

EngineOptions EngineOptionsFor(const Globals& g, EngineUse use) {
  EngineOptions options;
  options.name_space = g.name_space;
  options.retention = RetentionOf(g);
  options.ladder = LadderOf(g);
  options.settle_margin = SettleMarginOf(g);
  options.exact_retry_after =
      use == EngineUse::kOneShotExact || use == EngineUse::kLongRunningExact;
  const bool long_running = use == EngineUse::kLongRunning || use == EngineUse::kLongRunningExact;
  options.hot_path = long_running ? HotPathOptions::LongRunning() : HotPathOptions::OneShot();
  options.confirm_take_backs = long_running;
  if (g.exact_cover) options.hot_path = HotPathOptions::Off();
  return options;
}

std::string StoreUrl(const Globals& g) {
  if (IsStoreUrl(g.store)) {
    if (g.servers_given) {
      Fail(kUsage, fmt::format("--servers {} and --store {}: the URL names the servers already; "
                               "give one of them",
                               g.servers, g.store));
    }
    if (!g.previous_servers.empty() && !g.store.starts_with("memcached://")) {
      Fail(kUsage, "--previous-servers belongs to a memcached store");
    }
    return g.store;
  }
  if (g.store != "memcached" && !g.previous_servers.empty()) {
    Fail(kUsage, "--previous-servers belongs to --store memcached");
  }
  if (g.store == "memory") return "memory://";
  if (g.store == "memcached") {
    return "memcached://" + (g.servers.empty() ? std::string("127.0.0.1:11211") : g.servers);
  }
  if (g.store == "redis") {
    return "redis://" + (g.servers.empty() ? std::string("127.0.0.1:6379") : g.servers);
  }
  if (g.store == "lmdb") {
    Fail(kUsage, "--store lmdb needs its directory: --store lmdb:///path/to/dir");
  }
  if (g.store == "redis-cluster") {
    if (g.servers.empty()) {
      Fail(kUsage, "--store redis-cluster needs --servers: some of the cluster's nodes");
    }
    return "redis+cluster://" + g.servers;
  }
  Fail(kUsage, fmt::format("--store {}: expected memcached, redis, redis-cluster, memory or a "
                           "store URL (memcached://H:P, redis://H:P, redis+cluster://H:P, "
                           "lmdb:///DIR)",
                           g.store));
}

size_t StoreConnections(const Globals& g) {
  const std::string url = StoreUrl(g);
  if (url == "memory://" || url.starts_with("lmdb://")) return 0;
  const size_t scheme = url.find("://") + 3;
  const size_t at = url.rfind('@');
  std::string list = url.substr(at == std::string::npos ? scheme : at + 1);
  list = list.substr(0, list.find_first_of("/?"));
  const Result<std::vector<std::string>> servers = ParseServers(list);
  const std::string previous_list = g.previous_servers.substr(0, g.previous_servers.find('?'));
  const Result<std::vector<std::string>> previous =
      previous_list.empty() ? Result<std::vector<std::string>>(std::vector<std::string>{})
                            : ParseServers(previous_list);
  const size_t count =
      (servers.ok() ? servers->size() : 0) + (previous.ok() ? previous->size() : 0);
  return count * MemcachedOptions{}.pool_size;
}

Runtime::Runtime(const Globals& g, const Clock& clock, EngineUse use,
                 ServerTransitionHandler on_transition)
    : store_(OpenCliStore(g, clock, std::move(on_transition))) {
  EngineOptions options = EngineOptionsFor(g, use);
  options.losses = &losses_;
  engine_.emplace(Unwrap(Engine::Create(*store_, clock, options)));
}

void ReadLossNotes(Store& store, StoreLosses& losses) {
  for (const Result<ServerNote>& note : store.Notes()) {
    // A server that cannot answer fails the command's own exchange, which says so.
    if (!note.ok() || !note->text) continue;
    Result<std::optional<StoreLoss>> loss = ParseLossNote(*note->text, note->kind, note->server);
    if (!loss.ok()) {
      std::fprintf(stderr, "hourglass: warning: %s\n", loss.error().message().c_str());
    } else if (*loss) {
      losses.Record(**loss);
    }
  }
}

}  // namespace hourglass::cli
