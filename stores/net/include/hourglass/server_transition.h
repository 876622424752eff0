// A network store's servers failing and answering again, told to whoever operates the process
// (hourglass serve logs each transition once).
//
//   options.on_transition = [](const ServerTransition& t) { Log(t.server, t.reachable); };
//
// Thread-safety: plain values; a handler is called from any thread using the store.
#pragma once

#include <functional>
#include <string>

namespace hourglass {

// A server of the store that stopped answering, or answers again.
struct ServerTransition {
  std::string kind = "memcached";  // the store's kind: "memcached", "redis"
  std::string server;              // "host:port" as listed
  bool reachable = false;
  std::string error = "";  // what failed, when !reachable
};
// Thread-safety: called from any thread using the store; must not call into the store.
using ServerTransitionHandler = std::function<void(const ServerTransition&)>;

}  // namespace hourglass
