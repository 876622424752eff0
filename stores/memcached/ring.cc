#include "ring.h"

#include <fmt/format.h>
#include <libmemcached-1.0/memcached.h>

namespace hourglass::memcached {

struct HashRing::Handle {
  memcached_st* ring = nullptr;
  ~Handle() {
    if (ring != nullptr) memcached_free(ring);
  }
};

HashRing::HashRing(std::unique_ptr<Handle> handle, std::vector<ServerAddress> servers)
    : handle_(std::move(handle)), servers_(std::move(servers)) {}

HashRing::~HashRing() = default;

Result<std::unique_ptr<HashRing>> HashRing::Create(const std::vector<std::string>& servers) {
  // Names and IPv4 addresses as libmemcached's configuration string takes them; its parser has no
  // form for an IPv6 literal, which is added as host and port (what a client calling
  // memcached_server_add does).
  std::string config;
  std::vector<ServerAddress> v6;
  for (const std::string& server : servers) {
    Result<ServerAddress> address = ParseServer(server);
    if (!address.ok()) return address.error();
    if (address->host.find(':') != std::string::npos) {
      v6.push_back(*address);
    } else {
      config += fmt::format("--SERVER={} ", server);
    }
  }
  config += "--DISTRIBUTION=consistent";
  auto handle = std::make_unique<Handle>();
  handle->ring = ::memcached(config.data(), config.size());
  if (handle->ring == nullptr) {
    return Error(ErrorCode::kInternal, "libmemcached rejected the configuration: " + config);
  }
  for (const ServerAddress& address : v6) {
    const memcached_return_t rc = memcached_server_add(
        handle->ring, address.host.c_str(), static_cast<in_port_t>(std::stoi(address.port)));
    if (rc != MEMCACHED_SUCCESS) {
      return Error(ErrorCode::kInternal,
                   fmt::format("libmemcached rejected the server {}: {}", HostPort(address),
                               memcached_strerror(handle->ring, rc)));
    }
  }
  std::vector<ServerAddress> addresses;
  const uint32_t count = memcached_server_count(handle->ring);
  for (uint32_t i = 0; i < count; ++i) {
    const memcached_instance_st* instance = memcached_server_instance_by_position(handle->ring, i);
    addresses.push_back(ServerAddress{memcached_server_name(instance),
                                      std::to_string(memcached_server_port(instance))});
  }
  if (addresses.empty()) return InvalidArgument("no memcached server given");
  return std::unique_ptr<HashRing>(new HashRing(std::move(handle), std::move(addresses)));
}

size_t HashRing::PositionOf(std::string_view group) const {
  if (servers_.size() == 1) return 0;
  // Read-only on the ring (no auto-eject), so safe from many threads.
  return memcached_generate_hash(handle_->ring, group.data(), group.size()) % servers_.size();
}

}  // namespace hourglass::memcached
