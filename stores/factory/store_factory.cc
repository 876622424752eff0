#include "hourglass/store_factory.h"

#include <fmt/format.h>

#include "hourglass/memory_store.h"

namespace hourglass {
namespace {

constexpr std::string_view kMemory = "memory://";
constexpr std::string_view kMemcached = "memcached://";

Result<std::unique_ptr<MemcachedStore>> OpenMemcached(std::string_view list, const Clock& clock,
                                                      MemcachedOptions options) {
  Result<std::vector<std::string>> servers = ParseServers(list);
  if (!servers.ok()) return servers.error();
  options.servers = std::move(*servers);
  return MemcachedStore::Create(options, clock);
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const Clock& clock,
                                         MemcachedOptions memcached,
                                         std::string_view previous_servers) {
  if (url == kMemory && previous_servers.empty()) {
    return std::unique_ptr<Store>(std::make_unique<MemoryStore>(clock));
  }
  if (url == kMemory) return InvalidArgument("previous servers belong to a memcached store");
  if (url.starts_with(kMemcached)) {
    Result<std::unique_ptr<MemcachedStore>> store =
        OpenMemcached(url.substr(kMemcached.size()), clock, memcached);
    if (!store.ok()) return store.error();
    if (previous_servers.empty()) return std::unique_ptr<Store>(std::move(*store));
    Result<std::unique_ptr<MemcachedStore>> previous =
        OpenMemcached(previous_servers, clock, memcached);
    if (!previous.ok()) {
      return InvalidArgument("previous servers: " + previous.error().message());
    }
    return std::unique_ptr<Store>(
        std::make_unique<TransitionStore>(std::move(*store), std::move(*previous)));
  }
  return InvalidArgument(
      fmt::format("store \"{}\": expected memory:// or memcached://HOST:PORT[,HOST:PORT...]", url));
}

}  // namespace hourglass
