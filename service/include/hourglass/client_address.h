// Which address a request comes from when proxies stand in front: the connection's peer, or an
// entry of X-Forwarded-For, trusted only as far as the configured proxies vouch for it.
//
// X-Forwarded-For is a list each proxy appends its own peer to; anything left of the entries the
// trusted proxies appended is whatever the client sent, so it is never believed. Two ways to say
// which proxies are trusted, as express's `trust proxy` and nginx's `real_ip` do:
//   hops:   the client is the entry `hops` places from the right of [X-Forwarded-For..., peer]
//           (1: the rightmost entry, the one the proxy in front appended); fewer entries than
//           that: the leftmost;
//   ranges: walk [X-Forwarded-For..., peer] from the right while the address lies in a trusted
//           range; the first that does not is the client (all trusted: the leftmost).
//
//   TrustedProxies trusted{.hops = 1, .ranges = {}};
//   Result<std::string> client = ClientAddress("10.0.0.2", "6.6.6.6, 203.0.113.7", trusted);
//   // "203.0.113.7": 6.6.6.6 is the client's own claim
//
// Thread-safety: pure functions and value types.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/ip_network.h"
#include "hourglass/status.h"

namespace hourglass {

struct TrustedProxies {
  size_t hops = 0;                // proxies in front, each appending to X-Forwarded-For
  std::vector<IpNetwork> ranges;  // addresses of trusted proxies
  bool any() const { return hops > 0 || !ranges.empty(); }
};

// The client's address, canonical ("2001:db8::1", an IPv4-mapped address as IPv4), from the
// connection's `peer` and the X-Forwarded-For value (several headers joined by ","; empty when
// absent). kInvalidArgument naming the entry when one is not an address (a bare address; an IPv6
// one may be bracketed) or the list is too long; the peer is then never counted instead.
Result<std::string> ClientAddress(std::string_view peer, std::string_view forwarded_for,
                                  const TrustedProxies& trusted);

}  // namespace hourglass
