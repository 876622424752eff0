// Internal to the Redis store: the Lua scripts every batch runs in, loaded on each new connection
// (SCRIPT LOAD) and called by their SHA-1 (EVALSHA).
//
// kApply runs one batch atomically: its guards (the store's conditional batches), then its writes
// in order, then its reads. Its arguments, after the keys (every key the batch names, tagged):
//
//   ARGV  = G, guard*G, N, op*N, read*
//   guard = max, base, T, (key index, slot, sign)*T    applies when base + sum(sign * value) <= max
//   op    = "c", key index, delta, ttl                 counter += delta (> 0), ttl at creation
//         | "s", key index, amount                     counter -= amount, floored at 0, if present
//         | "p", key index, ttl, header, records       pack: created with header and ttl when ttl >
//         0
//                                                      and missing, records appended if present
//         | "x", key index                             delete
//   read  = key index                                  answered raw (GET), nil when missing
//
// A slot is -1 for a counter, else the pack slot's index (PackSlotIndex): the script folds packs
// for guards; the store folds what it reads. It answers {applied (1 or 0), read values...}; a
// write to a value that is not a counter makes it answer an error "NOTCOUNTER <key>" (writes
// before it stand, as on memcached); a key of another type reads as absent. Counters saturate at 2^63 - 1 (Redis's integers are signed).
//
// kCompact replaces a pack's first n bytes by their compaction when they are still what was read
// (their SHA-1), keeping what was appended since and the TTL: KEYS = {pack}, ARGV = {n, sha1hex,
// compacted}; answers 1 when it rewrote the pack.
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
const Script& CompactScript();

// SHA-1 of `bytes` in lowercase hex (what redis.sha1hex gives).
std::string Sha1Hex(std::string_view bytes);

}  // namespace hourglass::redis
