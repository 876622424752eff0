// Internal to the Redis store: which server holds a group's keys.
//
// Keys are stored as `{<group>}<rest>`: the braces make Redis Cluster hash the group alone (a
// hash tag), so every key of one event+feature lives in one slot, on one node, and a batch is one
// script over keys of one slot. Standalone servers listed together share the groups by rendezvous
// hashing of the group (the same choice on every client that lists the same servers, in any
// order; adding a server moves about 1/n of the groups).
//
//   const std::string key = TaggedKey(group, key);             // "{hg:signup:ann}:1:1700000000"
//   uint16_t slot = HashSlot(key);                              // Redis Cluster's slot, 0..16383
//   size_t shard = RendezvousShard(group, {"a:6379", "b:6379"});
//
// Thread-safety: pure functions; SlotMap is a value.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"
#include "resp.h"

namespace hourglass::redis {

constexpr size_t kSlots = 16384;

// `key` (which starts with `group`) as stored in Redis: the group wrapped in braces.
std::string TaggedKey(std::string_view group, std::string_view key);
// The slot Redis Cluster puts `key` in: CRC16 (XMODEM) of its hash tag (the bytes between its
// first '{' and the next '}', when not empty) or of the whole key, modulo 16384.
uint16_t HashSlot(std::string_view key);
// The index in `servers` that holds `group` among standalone servers.
size_t RendezvousShard(std::string_view group, std::span<const std::string> servers);

// The masters serving each slot, from CLUSTER SLOTS.
struct SlotMap {
  std::vector<std::string> nodes;       // "host:port" of each master
  std::array<int16_t, kSlots> owner{};  // per slot, its node's index, -1 when none serves it
};
// Reads a CLUSTER SLOTS reply; `asked` is the "host:port" that answered (a master announced with
// an empty address is that host). kInternal for a malformed reply.
Result<SlotMap> ParseClusterSlots(const Reply& reply, std::string_view asked);

}  // namespace hourglass::redis
