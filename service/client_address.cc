#include "hourglass/client_address.h"

#include <fmt/format.h>

namespace hourglass {
namespace {

// More entries than any real chain of proxies; a longer list is refused, not walked.
constexpr size_t kMaxEntries = 64;

std::string_view Trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

Result<IpNetwork> ParseEntry(std::string_view entry) {
  std::string_view bare = Trim(entry);
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  Result<IpNetwork> address = IpNetwork::ParseAddress(bare);
  if (!address.ok()) {
    return InvalidArgument("X-Forwarded-For: " + address.error().message() +
                           "; each entry must be one address");
  }
  return address;
}

// [X-Forwarded-For..., peer], left to right.
Result<std::vector<IpNetwork>> Chain(std::string_view peer, std::string_view forwarded_for) {
  std::vector<IpNetwork> chain;
  if (!Trim(forwarded_for).empty()) {
    size_t start = 0;
    while (true) {
      const size_t comma = forwarded_for.find(',', start);
      if (chain.size() == kMaxEntries) {
        return InvalidArgument(
            fmt::format("X-Forwarded-For has more than {} entries", kMaxEntries));
      }
      Result<IpNetwork> entry = ParseEntry(forwarded_for.substr(start, comma - start));
      if (!entry.ok()) return entry.error();
      chain.push_back(*entry);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  Result<IpNetwork> p = IpNetwork::ParseAddress(peer);
  if (!p.ok()) return InvalidArgument("the connection's peer address is unknown");
  chain.push_back(*p);
  return chain;
}

bool Trusted(const IpNetwork& address, const std::vector<IpNetwork>& ranges) {
  for (const IpNetwork& range : ranges) {
    if (range.Contains(address)) return true;
  }
  return false;
}

}  // namespace

Result<std::string> ClientAddress(std::string_view peer, std::string_view forwarded_for,
                                  const TrustedProxies& trusted) {
  Result<std::vector<IpNetwork>> chain = Chain(peer, forwarded_for);
  if (!chain.ok()) return chain.error();
  const std::vector<IpNetwork>& c = *chain;
  if (!trusted.ranges.empty()) {
    size_t i = c.size() - 1;
    while (i > 0 && Trusted(c[i], trusted.ranges)) --i;
    return c[i].ToString();
  }
  const size_t from_right = std::min(trusted.hops, c.size() - 1);
  return c[c.size() - 1 - from_right].ToString();
}

}  // namespace hourglass
