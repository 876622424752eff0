#include "hourglass/store_factory.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "hourglass/lmdb_store.h"
#include "hourglass/memory_store.h"
#include "hourglass/redis_store.h"

namespace hourglass {
namespace {

constexpr std::string_view kMemory = "memory://";
constexpr std::string_view kMemcached = "memcached://";
constexpr std::string_view kRedis = "redis://";
constexpr std::string_view kRedisCluster = "redis+cluster://";
constexpr std::string_view kLmdb = "lmdb://";

Result<std::unique_ptr<MemcachedStore>> OpenMemcached(std::string_view list, const Clock& clock,
                                                      MemcachedOptions options) {
  Result<std::vector<std::string>> servers = ParseServers(list);
  if (!servers.ok()) return servers.error();
  options.servers = std::move(*servers);
  return MemcachedStore::Create(options, clock);
}

// The URL's ?replicas=N, if any, else `fallback`; the URL is cut before the '?'.
Result<size_t> ReplicasOf(std::string_view& list, size_t fallback) {
  const size_t q = list.find('?');
  if (q == std::string_view::npos) return fallback;
  const std::string_view query = list.substr(q + 1);
  list = list.substr(0, q);
  constexpr std::string_view kKey = "replicas=";
  size_t n = 0;
  const char* end = query.data() + query.size();
  if (!query.starts_with(kKey) || std::from_chars(query.data() + kKey.size(), end, n).ptr != end ||
      n < 1) {
    return InvalidArgument(
        fmt::format("memcached URL option \"{}\": the one option is replicas=N (N >= 1), e.g. "
                    "memcached://h1:11211,h2:11211?replicas=2",
                    query));
  }
  return n;
}

// The previous list of a transition ("h1:11211,h2:11211[?replicas=N]") and, in `copies`, how many
// copies of each count it kept: as many as the current list (`copies` given), unless it says
// otherwise or has fewer servers than that (a scale-out from one server).
Result<std::unique_ptr<MemcachedStore>> OpenPrevious(std::string_view list, const Clock& clock,
                                                     const MemcachedOptions& network,
                                                     size_t& copies) {
  const Result<size_t> said = ReplicasOf(list, 0);
  if (!said.ok()) return said.error();
  Result<std::unique_ptr<MemcachedStore>> previous = OpenMemcached(list, clock, network);
  if (!previous.ok()) return previous.error();
  copies = *said > 0 ? *said : std::min(copies, (*previous)->servers());
  if (Status s = CheckCopies(copies, (*previous)->servers()); !s.ok()) return s.error();
  return previous;
}

Result<std::unique_ptr<Store>> OpenMemcachedUrl(std::string_view url, const Clock& clock,
                                                const StoreOptions& options) {
  std::string_view list = url.substr(kMemcached.size());
  Result<size_t> copies = ReplicasOf(list, options.replicas);
  if (!copies.ok()) return copies.error();
  Result<std::unique_ptr<MemcachedStore>> store = OpenMemcached(list, clock, options.network);
  if (!store.ok()) return store.error();
  if (options.previous_servers.empty()) {
    if (*copies == 1) return std::unique_ptr<Store>(std::move(*store));
    Result<std::unique_ptr<ReplicatedStore>> replicated =
        ReplicatedStore::Create(std::move(*store), *copies);
    if (!replicated.ok()) return replicated.error();
    return std::unique_ptr<Store>(std::move(*replicated));
  }
  if (Status s = CheckCopies(*copies, (*store)->servers()); !s.ok()) return s.error();
  size_t previous_copies = *copies;
  Result<std::unique_ptr<MemcachedStore>> previous =
      OpenPrevious(options.previous_servers, clock, options.network, previous_copies);
  if (!previous.ok()) {
    return InvalidArgument("previous servers: " + previous.error().message());
  }
  return std::unique_ptr<Store>(std::make_unique<TransitionStore>(
      std::move(*store), std::move(*previous), *copies, previous_copies));
}

Result<std::unique_ptr<Store>> OpenRedisUrl(std::string_view url, const Clock& clock,
                                            const StoreOptions& options) {
  Result<RedisOptions> redis = ParseRedisUrl(url);
  if (!redis.ok()) return redis.error();
  const MemcachedOptions& n = options.network;
  redis->connect_timeout = n.connect_timeout;
  redis->io_timeout = n.io_timeout;
  redis->retry_timeout = n.retry_timeout;
  redis->pool_size = n.pool_size;
  redis->pool_wait = n.pool_wait;
  redis->idle_check_after = n.idle_check_after;
  redis->on_transition = n.on_transition;
  if (redis->password.empty()) redis->password = options.redis_password;
  Result<std::unique_ptr<RedisStore>> store = RedisStore::Create(*redis, clock);
  if (!store.ok()) return store.error();
  return std::unique_ptr<Store>(std::move(*store));
}

}  // namespace

bool IsStoreUrl(std::string_view url) {
  for (std::string_view scheme : {kMemory, kMemcached, kRedis, kRedisCluster, kLmdb}) {
    if (url.starts_with(scheme)) return true;
  }
  return false;
}

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const Clock& clock,
                                         const StoreOptions& options) {
  const bool memcached = url.starts_with(kMemcached);
  if (!options.previous_servers.empty() && !memcached) {
    return InvalidArgument("previous servers belong to a memcached store");
  }
  if (options.replicas > 1 && !memcached) {
    return InvalidArgument(
        "replicas belong to a memcached store (Redis keeps copies by its own replication)");
  }
  if (url == kMemory) return std::unique_ptr<Store>(std::make_unique<MemoryStore>(clock));
  if (memcached) return OpenMemcachedUrl(url, clock, options);
  if (url.starts_with(kRedis) || url.starts_with(kRedisCluster)) {
    return OpenRedisUrl(url, clock, options);
  }
  if (url.starts_with(kLmdb)) {
    Result<LmdbOptions> lmdb = ParseLmdbUrl(url);
    if (!lmdb.ok()) return lmdb.error();
    Result<std::unique_ptr<LmdbStore>> store = LmdbStore::Create(*lmdb, clock);
    if (!store.ok()) return store.error();
    return std::unique_ptr<Store>(std::move(*store));
  }
  return InvalidArgument(fmt::format(
      "store \"{}\": expected memory://, memcached://HOST:PORT[,HOST:PORT...], "
      "redis://HOST:PORT[,HOST:PORT...][/DB], redis+cluster://HOST:PORT[,...] or lmdb:///DIR",
      url));
}

}  // namespace hourglass
