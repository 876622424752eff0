// Internal to the memcached store: packs' bases (packed_layout.h, "A base") as memcached keeps
// them: the copies of bases a store has read, packs made whole from a get's answer, and the
// compaction of a pack into a new base.
//
// A compaction into a base takes two round trips on one connection. The base is stored first
// (`ms <base> <n> T<expiry>`); only once it is, the pack is rewritten to name it, if nothing was
// appended since it was read (`ms <pack> <n> C<cas> T<expiry>`). So a pack never names a base
// that was not stored. Then the base the pack named before is deleted, or, when the rewrite lost
// its race, the new one: each compaction names its base by a random token, so no other pack names
// it. A pack whose hour has passed goes back to one item the same way (its base deleted once the
// pack no longer names it). A reader that meets a deleted base (it read the pack before a
// rewrite) reads the pack again.
//
// Thread-safety: BaseCache may be used from many threads at once; the functions use one
// connection, from one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/net/connection.h"
#include "hourglass/status.h"
#include "protocol.h"

namespace hourglass::memcached {

// Bases read, by key, up to `max_bytes` of them (the oldest go first). A base never changes, so a
// copy never goes stale.
//
// A base read from a copy here is not read on the server, where it would then look unused beside
// its pack, which every check reads: memcached evicts the least recently used items first, and
// a base evicted loses its hour's counts for every reader without a copy (a CLI call, a service
// just started). So each base a store reads from its copy is fetched on the server again once
// kTouchEvery has passed since the store last read, wrote or fetched it (Use): memcached
// marks an item fetched again as active and moves it away from the cold end that eviction takes
// from. (Measured on memcached 1.6 at -m 8: of two items set together, the one fetched once per
// 2,000 sets of others outlived 31,000 evictions; the other, and the first without the fetches,
// did not.)
class BaseCache {
 public:
  static constexpr size_t kDefaultBytes = size_t{16} << 20;
  static constexpr Seconds kTouchEvery{30};  // memcached refreshes an item's use once a minute
  explicit BaseCache(size_t max_bytes = kDefaultBytes) : max_bytes_(max_bytes) {}
  std::shared_ptr<const std::string> Find(const std::string& key) const;
  // Keeps `value`, read from or written to the server at `at`.
  void Put(const std::string& key, std::string value, Instant at);
  // Find(key) for a reader at `now`, in one look: `fetch_due` tells whether the copy was last
  // read, written or fetched on the server kTouchEvery or more before `now`; if so it counts as
  // fetched at `now` (the caller fetches it).
  std::shared_ptr<const std::string> Use(const std::string& key, Instant now, bool& fetch_due);

 private:
  struct Kept {
    std::shared_ptr<const std::string> value;
    Instant touched{};
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Kept> bases_;  // guarded by mu_
  std::deque<std::string> order_;                // guarded by mu_
  size_t bytes_ = 0;                             // guarded by mu_
  const size_t max_bytes_;
};

// The packs whose compaction into a base one store has under way, so that its threads do not race
// each other to write bases of which one alone can be named; and those whose last compaction lost
// its race to an append, so that a pack appended to faster than a compaction's two round trips
// is tried again once kBaseTailBytes more were appended, not at every read.
class Compacting {
 public:
  // Whether a compaction of `pack`, its own item `own` bytes long, should wait.
  bool Busy(const std::string& pack, size_t own) const;
  // False when another thread has it.
  bool Claim(const std::string& pack);
  // The compaction of `pack` (read `own` bytes long) ended: `named`, the pack names its base.
  void Release(const std::string& pack, size_t own, bool named);

 private:
  static constexpr size_t kMaxLost = 4096;  // packs remembered (forgotten all at once when full)
  mutable std::mutex mu_;
  std::unordered_set<std::string> packs_;         // guarded by mu_
  std::unordered_map<std::string, size_t> lost_;  // own bytes at a lost race; guarded by mu_
};

// Makes whole each pack of `answer` (to a get of `reads`, at `now`) whose base `cache` holds,
// noting its base and own bytes in answer.pack_base and answer.pack_own, and the bases due to be
// fetched on the server in `touch` (BaseCache::Use). Returns the indices of the packs whose
// base it lacks, left as they were.
std::vector<size_t> AssembleFromCache(BaseCache& cache, std::span<const std::string> reads,
                                      Instant now, GetAnswer& answer,
                                      std::vector<std::string>& touch);
// Appends the fetches of `bases` to `out`, quiet, then "mn": one answer owed ("MN"), after "HD"
// lines for the bases still there.
void BuildTouches(std::span<const std::string> bases, std::string& out);

// Makes whole the packs `missing` lists of `answer` (to a get of `reads`) on `c` (in step, nothing
// owed): each one's base read, or, when it is gone (deleted since the pack was read), the pack read
// whole again (ReadWhole). An error leaves `c` out of step.
Status CompleteFromServer(std::string_view server, net::Connection& c,
                          std::span<const std::string> reads, std::span<const size_t> missing,
                          Instant now, BaseCache& cache, GetAnswer& answer);

// A pack as ReadWhole read it.
struct WholePack {
  std::optional<std::string> value;  // base and own records; nullopt: no pack
  uint64_t cas = 0;
  std::string base;  // the base it named ("" none)
  size_t own = 0;    // the bytes of the pack's own item
};
// Reads `pack` whole on `c` (in step, nothing owed): its `gets`, then its base's `get`
// unless `cache` holds it, and again while the base is missing (a compaction deleted it since
// the pack was read), kMaxReads times in all. A base still missing then was lost (evicted): the
// pack reads as its own records, as an evicted item reads as none. An error leaves `c` out of
// step.
inline constexpr int kMaxReads = 4;
Result<WholePack> ReadWhole(std::string_view server, net::Connection& c, const std::string& pack,
                            Instant now, BaseCache& cache);

// Makes `compaction` (WithBases()) on `c` (in step, nothing owed), as above: its new base stored,
// if any, then the pack rewritten under its CAS; `named` tells whether that took. Then the base
// no pack names, if any, is deleted, unanswered: `owed` counts the answers it left ("MN"). An
// error leaves `c` out of step.
Status RewriteWithBases(std::string_view server, net::Connection& c,
                        const PackCompaction& compaction, int& owed, bool& named);

// A random token for a new base.
uint64_t NewBaseToken();

}  // namespace hourglass::memcached
