#include "placement.h"

#include <fmt/format.h>

#include "hourglass/net/servers.h"

namespace hourglass::redis {
namespace {

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis Cluster's key hashing.
uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char byte : bytes) {
    crc = static_cast<uint16_t>(crc ^ (byte << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

// FNV-1a over `a` then `b`, finished with splitmix64: stable across processes, builds and
// machines (std::hash is not).
uint64_t StableHash(std::string_view a, std::string_view b) {
  uint64_t h = 14695981039346656037ull;
  for (std::string_view part : {a, std::string_view("\0", 1), b}) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ull;
  }
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

std::string NodeAddress(const Reply& host, const Reply& port, std::string_view asked) {
  std::string h = host.text;
  if (h.empty() || h == "?") {
    Result<net::ServerAddress> a = net::ParseServer(asked);
    h = a.ok() ? a->host : std::string(asked);
  }
  return net::HostPort(net::ServerAddress{h, std::to_string(port.integer)});
}

}  // namespace

std::string TaggedKey(std::string_view group, std::string_view key) {
  std::string tagged;
  tagged.reserve(key.size() + 2);
  tagged += '{';
  tagged += group;
  tagged += '}';
  tagged += key.substr(std::min(group.size(), key.size()));
  return tagged;
}

uint16_t HashSlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(key) & (kSlots - 1));
}

size_t RendezvousShard(std::string_view group, std::span<const std::string> servers) {
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < servers.size(); ++i) {
    const uint64_t score = StableHash(servers[i], group);
    if (i == 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

Result<SlotMap> ParseClusterSlots(const Reply& reply, std::string_view asked) {
  const auto bad = [&](std::string_view why) {
    return Error(ErrorCode::kInternal,
                 fmt::format("redis {}: CLUSTER SLOTS answered what hourglass cannot read ({})",
                             asked, why));
  };
  if (reply.error()) {
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("redis {}: CLUSTER SLOTS: {} (is it a Redis Cluster node? use "
                             "redis:// for standalone servers)",
                             asked, reply.text));
  }
  if (reply.type != Reply::Type::kArray) return bad("not an array");
  SlotMap map;
  map.owner.fill(-1);
  for (const Reply& range : reply.elements) {
    if (range.type != Reply::Type::kArray || range.elements.size() < 3) return bad("a short range");
    const Reply& first = range.elements[0];
    const Reply& last = range.elements[1];
    const Reply& master = range.elements[2];
    if (first.type != Reply::Type::kInteger || last.type != Reply::Type::kInteger ||
        first.integer < 0 || last.integer >= static_cast<long long>(kSlots) ||
        first.integer > last.integer) {
      return bad("a range that is not one of slots");
    }
    if (master.type != Reply::Type::kArray || master.elements.size() < 2 ||
        master.elements[0].type != Reply::Type::kString ||
        master.elements[1].type != Reply::Type::kInteger) {
      return bad("a master without an address");
    }
    const std::string node = NodeAddress(master.elements[0], master.elements[1], asked);
    if (Result<net::ServerAddress> parsed = net::ParseServer(node); !parsed.ok()) {
      return bad(fmt::format("a master at \"{}\"", node));
    }
    size_t index = 0;
    while (index < map.nodes.size() && map.nodes[index] != node) ++index;
    if (index == map.nodes.size()) map.nodes.push_back(node);
    for (long long s = first.integer; s <= last.integer; ++s) {
      map.owner[static_cast<size_t>(s)] = static_cast<int16_t>(index);
    }
  }
  return map;
}

}  // namespace hourglass::redis
