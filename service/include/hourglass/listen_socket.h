// What every listener of the service does first: an IP address and port made a listening
// acceptor, with the errors an operator can act on.
//
//   tcp::acceptor acceptor(context);
//   if (Status s = ListenOn(acceptor, "0.0.0.0", 8081, "gRPC"); !s.ok()) return s.error();
//
// Thread-safety: as the acceptor's (one thread).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "hourglass/status.h"

namespace hourglass {

// Opens `acceptor` on `host` (an IP address, IPv4 or IPv6, not a name) and `port` (0: a free one,
// see the acceptor's local_endpoint()), with SO_REUSEADDR, listening. `protocol` names the
// listener in the errors ("gRPC"; empty for the HTTP listener): kInvalidArgument when `host` is not
// an IP address, kUnavailable when the address cannot be bound.
Status ListenOn(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host, uint16_t port,
                std::string_view protocol);

}  // namespace hourglass
