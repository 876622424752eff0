// Internal to the memcached store: the text protocol of a batch, with meta commands
// (memcached >= 1.6).
//
// A batch is one request: `ma <key> N<ttl> J<d> D<d> q` per increment (atomic create-or-add),
// `ma <key> MD D<d> q` per decrement (floored at 0), then one `get` of every read key, or `mn`
// when nothing is read. Quiet commands answer only when they create a key ("HD"), miss one
// ("NF") or fail; "mn" answers "MN" after everything sent before it.
//
// Thread-safety: pure functions; the readers use one connection, from one thread. Nothing here
// knows of pools or counters: the store keeps that bookkeeping.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/net/connection.h"
#include "hourglass/packed_layout.h"
#include "hourglass/status.h"
#include "hourglass/store.h"

namespace hourglass::memcached {

using packed::kPackHeaderBytes;
using packed::PackAppend;
using packed::PackHeader;

// The request for `batch` into `out`: its increments, then the get. `appends` (packed layout:
// `ms <pack> 4 ME T<ttl> q` creating a pack that may be missing, `ms <pack> <n> MA q` appending
// its records; both answer only "NS", harmlessly, when the pack exists or is missing) go after
// the first `appends_at` increments (where the batch had its packed keys), so that everything
// takes effect in the batch's order (Store's contract). TTLs over 30 days are sent as Unix times
// from `now`.
// With `with_cas`, the get is a `gets` (the packs' CAS values, for compaction).
void BuildRequest(const Batch& batch, Instant now, std::string& out,
                  std::span<const PackAppend> appends = {}, bool with_cas = false,
                  size_t appends_at = SIZE_MAX);

// A pack rewritten in fewer records, if nothing was appended since it was read (CAS). Into its
// own item: `ms <key> <n> C<cas> T<expiry> q` per compaction, then `mn`; a lost race answers
// "EX", harmlessly. Into a base (base_key set): pack_bases.h.
struct PackCompaction {
  std::string key;
  uint64_t cas = 0;
  uint32_t expiry = 0;     // Unix seconds
  std::string value;       // the pack's new value
  std::string base_key;    // a base to store first ("" none)
  std::string base_value;  // its value
  std::string old_base;    // the base the pack named when read ("" none), deleted after
  size_t own = 0;          // the bytes of the pack's own item when read
  // Into a base, or out of one: a rewrite of pack_bases.h, not BuildCompactions'.
  bool WithBases() const { return !base_key.empty() || !old_base.empty(); }
};
// The compactions not WithBases().
void BuildCompactions(std::span<const PackCompaction> compactions, std::string& out);
// `md <key> q` per key, then `appends` (never creating a pack), then `mn`: one round trip
// confirms every delete.
std::string BuildDeleteRequest(std::span<const std::string> keys,
                               std::span<const PackAppend> appends = {}, Instant now = {});

// The answer to `stats`, "STAT <name> <value>" lines up to "END", into `out` (out.server is the
// caller's). An error return leaves the connection out of step: the caller drops it.
Status ReadStats(std::string_view server, net::Connection& c, ServerStats& out);
// Reads the answer to `stats items` into out.classes: each slab class's evictions.
Status ReadItemStats(std::string_view server, net::Connection& c, ServerStats& out);

// Whether `line` is memcached's refusal to store for want of memory (run with -M, full).
bool IsOutOfMemory(std::string_view line);

// What an answer line other than the expected ones means, naming `server`: kStoreFull for a
// full memcached that evicts nothing, kUnavailable for another SERVER_ERROR, else kInternal.
Error LineError(std::string_view server, std::string_view line);

// LineError, or for memcached's refusal to increment a value that is not a counter, an error
// naming the keys `increments` touched and how to clear them.
Error IncrementError(std::string_view server, std::string_view line,
                     std::span<const Increment> increments);

// What the answers up to some "MN" lines said.
struct NoopAnswers {
  int read = 0;              // "MN" lines read
  uint64_t failures = 0;     // failures of requests whose callers did not wait
  std::optional<Error> own;  // with own_last: the first failure before the last MN
};
// Reads the answers on `c` up to `noops` "MN" lines into `out` (partly, on an error). Failures
// there belong to requests whose callers did not wait; with `own_last`, those before the last MN
// belong to the caller's own request instead. An error return leaves the connection out of
// step: the caller drops it.
Status ReadNoops(std::string_view server, net::Connection& c, int noops, bool own_last,
                 NoopAnswers& out);

// The answer to a get of `reads` (missing keys read 0).
struct GetAnswer {
  std::vector<uint64_t> values;  // values[i] of reads[i] (counters)
  // packs[i]: the bytes of reads[i] when it is a pack (nullopt: missing)
  std::vector<std::optional<std::string>> packs;
  std::vector<uint64_t> pack_cas;  // pack_cas[i]: the CAS of packs[i] (from `gets`)
  // Set when packs[i] was made whole with its base (pack_bases.h): the base's key, and the bytes
  // of the pack's own item.
  std::vector<std::string> pack_base;
  std::vector<size_t> pack_own;
  // An answer that was unexpected but kept the connection in step (e.g. a non-numeric value).
  std::optional<Error> error;
};
// `batch` is the request answered (its reads, its increments for messages); `is_pack[i]` says
// reads[i] is a pack (kept as bytes; empty: none is). An error return leaves the connection out
// of step: the caller drops it.
Result<GetAnswer> ReadGetAnswer(std::string_view server, net::Connection& c, const Batch& batch,
                                std::span<const uint8_t> is_pack = {});

// Sends `get <key>` (`gets` with `cas` given) on `c` and reads its answer: the value as bytes, or
// nullopt when the server has none; *cas its CAS. An error return other than the server's own
// answer leaves the connection out of step: the caller drops it.
Result<std::optional<std::string>> GetOne(std::string_view server, net::Connection& c,
                                          std::string_view key, uint64_t* cas = nullptr);

}  // namespace hourglass::memcached
