#include "hourglass/net/servers.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cctype>

namespace hourglass::net {
namespace {

bool ValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  int value = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= 65535;
}

// "[v6 address]": the brackets around an IPv6 literal.
bool ValidV6(std::string_view host) {
  if (host.size() < 3 || host.front() != '[' || host.back() != ']') return false;
  const std::string inner(host.substr(1, host.size() - 2));
  in6_addr address{};
  return inet_pton(AF_INET6, inner.c_str(), &address) == 1;
}

// A host name or IPv4 address: dot-separated labels of letters, digits, '-' and '_', none
// empty, none starting or ending with '-' (so no host reads as an option).
bool ValidName(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  size_t start = 0;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    if (dot == std::string_view::npos) dot = host.size();
    const std::string_view label = host.substr(start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (unsigned char c : label) {
      if (!std::isalnum(c) && c != '-' && c != '_') return false;
    }
    start = dot + 1;
  }
  return true;
}

bool ValidHost(std::string_view host) {
  return !host.empty() && (host.front() == '[' ? ValidV6(host) : ValidName(host));
}

}  // namespace

Result<ServerAddress> ParseServer(std::string_view text) {
  const size_t colon = text.rfind(':');
  const std::string_view host = colon == std::string_view::npos ? text : text.substr(0, colon);
  if (colon == std::string_view::npos || host.empty() || !ValidHost(host) ||
      !ValidPort(text.substr(colon + 1))) {
    return InvalidArgument(fmt::format(
        "server \"{}\": expected host:port (e.g. 127.0.0.1:11211 or [::1]:11211)", text));
  }
  const bool bracketed = host.front() == '[';
  return ServerAddress{std::string(bracketed ? host.substr(1, host.size() - 2) : host),
                       std::string(text.substr(colon + 1))};
}

std::string HostPort(const ServerAddress& address) {
  if (address.host.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", address.host, address.port);
  }
  return fmt::format("{}:{}", address.host, address.port);
}

}  // namespace hourglass::net
