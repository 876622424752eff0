// One place that turns a store URL into a Store, for the CLI, the services, benchmarks and tests.
//
//   "memory://"                          the in-memory store (one process)
//   "memcached://10.0.0.1:11211,10.0.0.2:11211"   memcached servers, listed the same way on
//                                                  every client (the hash ring hashes the text)
//   the same with `previous_servers` "10.0.0.1:11211": in transition from that list
//   (TransitionStore: writes go to the URL's servers, moved features are read on both)
//   "memcached://10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211?replicas=2", or `replicas` 2:
//   two copies of every count on distinct servers (ReplicatedStore)
//   "redis://[[USER]:PASSWORD@]10.0.0.5:6379[,...][/DB]"   standalone Redis servers
//   "redis+cluster://10.0.0.5:7000,10.0.0.6:7000"          a Redis Cluster, by any of its nodes
//   "lmdb:///var/lib/hourglass[?map_size=4GiB]"           one file the processes of a host share
//
//   Result<std::unique_ptr<Store>> store = OpenStore("memcached://127.0.0.1:11211", clock);
//
// Thread-safety: pure function; the stores it makes are safe to share between threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/memcached_store.h"
#include "hourglass/replicated_store.h"
#include "hourglass/status.h"
#include "hourglass/store.h"
#include "hourglass/transition_store.h"

namespace hourglass {

// What a store takes beyond its URL.
struct StoreOptions {
  // A network store's timeouts, pool and transition handler (memcached and Redis alike), and
  // memcached's layout; its `servers` are replaced by the URL's.
  MemcachedOptions network;
  // memcached only, when not empty: the list the servers are in transition from.
  std::string previous_servers = "";
  // memcached only: copies of every count on distinct servers (1: none; the URL's ?replicas=N
  // wins).
  size_t replicas = 1;
  // Redis: the password when the URL names none (e.g. from HOURGLASS_REDIS_PASSWORD).
  std::string redis_password = "";
};

// `clock` must outlive the store; the memory and LMDB stores expire values on it (the others on
// their servers' clocks). kInvalidArgument naming the URL for an unknown scheme or a bad
// server list.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const Clock& clock,
                                         const StoreOptions& options = {});

// Whether `url` names one of the stores above (by its scheme), for messages that list them.
bool IsStoreUrl(std::string_view url);

}  // namespace hourglass
