// Internal to the memcached store: which server holds a group's keys.
//
// libmemcached's consistent-hash (ketama) ring, used only to pick servers, so hourglass places
// keys where any libmemcached client listing the same servers in the same way does. This is the
// only file that includes libmemcached.
//
// Thread-safety: immutable after Create; PositionOf may be called from many threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/net/servers.h"
#include "hourglass/status.h"

namespace hourglass::memcached {

using net::HostPort;
using net::ParseServer;
using net::ServerAddress;

class HashRing {
 public:
  // `servers` as the user wrote them ("host:port"); the ring hashes these strings.
  static Result<std::unique_ptr<HashRing>> Create(const std::vector<std::string>& servers);
  ~HashRing();
  HashRing(const HashRing&) = delete;
  HashRing& operator=(const HashRing&) = delete;

  // The servers in ring order; PositionOf indexes this list.
  const std::vector<ServerAddress>& servers() const { return servers_; }
  size_t PositionOf(std::string_view group) const;

 private:
  struct Handle;
  explicit HashRing(std::unique_ptr<Handle> handle, std::vector<ServerAddress> servers);
  std::unique_ptr<Handle> handle_;
  std::vector<ServerAddress> servers_;
};

}  // namespace hourglass::memcached
