#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <vector>

#include "hourglass/memcached_store.h"
#include "hourglass/net/servers.h"

namespace hourglass {

Result<std::vector<std::string>> ParseServers(std::string_view list) {
  std::vector<std::string> servers;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view server = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (server.empty()) continue;
    if (Result<net::ServerAddress> parsed = net::ParseServer(server); !parsed.ok()) {
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
    Result<net::ServerAddress> address = net::ParseServer(server);
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
