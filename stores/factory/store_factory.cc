#include "hourglass/store_factory.h"

#include <fmt/format.h>

#include "hourglass/memory_store.h"

namespace hourglass {
namespace {

constexpr std::string_view kMemory = "memory://";
constexpr std::string_view kMemcached = "memcached://";

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const Clock& clock,
                                         MemcachedOptions memcached) {
  if (url == kMemory) return std::unique_ptr<Store>(std::make_unique<MemoryStore>(clock));
  if (url.starts_with(kMemcached)) {
    Result<std::vector<std::string>> servers = ParseServers(url.substr(kMemcached.size()));
    if (!servers.ok()) return servers.error();
    memcached.servers = std::move(*servers);
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(memcached, clock);
    if (!store.ok()) return store.error();
    return std::unique_ptr<Store>(std::move(*store));
  }
  return InvalidArgument(
      fmt::format("store \"{}\": expected memory:// or memcached://HOST:PORT[,HOST:PORT...]", url));
}

}  // namespace hourglass
