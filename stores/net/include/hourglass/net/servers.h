// Shared by the network stores: server addresses as the user writes them.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "hourglass/status.h"

namespace hourglass::net {

struct ServerAddress {
  std::string host;  // without brackets: "::1" for "[::1]"
  std::string port;  // decimal, 1 to 65535
};

// One "host:port" or "[v6]:port"; kInvalidArgument naming the input and the expected form.
Result<ServerAddress> ParseServer(std::string_view text);
// "host:port", or "[v6]:port" for a host with a colon.
std::string HostPort(const ServerAddress& address);

}  // namespace hourglass::net
