// One place that turns a store URL into a Store, for the CLI, the services, benchmarks and tests.
//
//   "memory://"                          the in-memory store (one process)
//   "memcached://10.0.0.1:11211,10.0.0.2:11211"   memcached servers, listed the same way on
//                                                  every client (the hash ring hashes the text)
//   the same with `previous_servers` "10.0.0.1:11211": in transition from that list
//   (TransitionStore: writes go to the URL's servers, moved features are read on both)
//
//   Result<std::unique_ptr<Store>> store = OpenStore("memcached://127.0.0.1:11211", clock);
//
// Thread-safety: pure function; the stores it makes are safe to share between threads.
#pragma once

#include <memory>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/memcached_store.h"
#include "hourglass/status.h"
#include "hourglass/store.h"
#include "hourglass/transition_store.h"

namespace hourglass {

// `clock` must outlive the store. `memcached` gives the timeouts and pool of a memcached store;
// its `servers` are replaced by the URL's. `previous_servers` (memcached only), when not empty,
// is the list the servers were in transition from. kInvalidArgument naming the URL for an unknown
// scheme or a bad server list.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const Clock& clock,
                                         MemcachedOptions memcached = {},
                                         std::string_view previous_servers = "");

}  // namespace hourglass
