// Internal to the Redis store: the Lua scripts every batch runs in, loaded on each new connection
// (SCRIPT LOAD) and called by their SHA-1 (EVALSHA).
//
// kApply runs one batch atomically: its guards (the store's conditional batches), then its writes
// in order, then its reads. Its arguments, after the keys (every key the batch names, tagged):
//
//   ARGV  = G, guard*G, N, op*N, reads
//   guard = max, base, terms       applies when base + sum(sign * value) <= max; terms: 5 bytes
//                                  each, key index and slot (big-endian 16 bits), sign (0: +1)
//   op    = "c", key index, delta, ttl     counter += delta (> 0), ttl at creation
//         | "s", key index, amount         counter -= amount, floored at 0, if present
//         | "p", key index, ttl, records   pack records (the packed layout's) applied to the pack's
//                                          hash, made with ttl when missing and ttl > 0
//         | "x", key index                 delete
//   reads = 4 bytes per read: key index and slot, big-endian 16 bits
//
// A slot is 65535 for a counter, else the pack slot's index (packed::SlotIndex). A pack is a hash
// of its hour ('h') and its minutes (a byte each, 0..59, with their seconds that are not 0): a read
// of a slot reads one field, however busy the hour: the packed layout's records are how writes
// arrive, not how Redis keeps them. It answers {applied (1 or 0), value per read}: a counter's
// as stored (nil when missing), a pack slot's as an integer, or "NOTPACK" for a pack key that
// holds something else. A write to a value that is not ours makes it answer an error
// "NOTCOUNTER <key>" (writes before it stand, as on memcached). Counters saturate at 2^63 - 1
// (Redis's integers are signed).
//
// Thread-safety: constants.
#pragma once

#include <string>
#include <string_view>

namespace hourglass::redis {

struct Script {
  std::string_view source;
  std::string sha1;  // lowercase hex, as EVALSHA takes it
};

const Script& ApplyScript();

// SHA-1 of `bytes` in lowercase hex (what redis.sha1hex gives).
std::string Sha1Hex(std::string_view bytes);

}  // namespace hourglass::redis
