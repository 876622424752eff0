#include "servers.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "hourglass/memcached_store.h"

namespace hourglass {
namespace memcached {
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

}  // namespace memcached

Result<std::vector<std::string>> ParseServers(std::string_view list) {
  std::vector<std::string> servers;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view server = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (server.empty()) continue;
    if (Result<memcached::ServerAddress> parsed = memcached::ParseServer(server); !parsed.ok()) {
      return parsed.error();
    }
    servers.emplace_back(server);
  }
  if (servers.empty()) return InvalidArgument("no memcached server given; e.g. 127.0.0.1:11211");
  return servers;
}

std::vector<std::string> SameServerWarnings(const std::vector<std::string>& servers) {
  std::vector<std::pair<std::string, std::set<std::string>>> reached;  // entry, "address port"
  for (const std::string& server : servers) {
    Result<memcached::ServerAddress> address = memcached::ParseServer(server);
    if (!address.ok()) continue;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (getaddrinfo(address->host.c_str(), address->port.c_str(), &hints, &found) != 0) continue;
    std::set<std::string> endpoints;
    for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      char host[NI_MAXHOST];
      if (getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST) ==
          0) {
        endpoints.insert(fmt::format("{} {}", host, address->port));
      }
    }
    freeaddrinfo(found);
    reached.emplace_back(server, std::move(endpoints));
  }
  std::vector<std::string> warnings;
  for (size_t i = 0; i < reached.size(); ++i) {
    for (size_t j = i + 1; j < reached.size(); ++j) {
      const auto& b_endpoints = reached[j].second;
      const bool same = std::any_of(reached[i].second.begin(), reached[i].second.end(),
                                    [&](const std::string& e) { return b_endpoints.count(e); });
      if (!same) continue;
      warnings.push_back(fmt::format(
          "servers \"{}\" and \"{}\" are one memcached: list it once, spelled the same way on "
          "every client (the ring hashes the text)",
          reached[i].first, reached[j].first));
    }
  }
  return warnings;
}

}  // namespace hourglass
