// The packed layout, shared by the stores that keep values as bytes (memcached, Redis, LMDB): one
// feature's second, minute and hour buckets of one hour live in one value, a log of 2-byte
// records, instead of one counter each (a memcached item or a Redis key costs ~50-100 bytes of
// header and key whatever its value).
//
//   pack key   <group>:p:<hour index>            (hour index = floor(t / 3600))
//   value      u32 LE expiry (Unix seconds, as created), then records, appended atomically
//   record     u16 LE head = offset | kind << 12; offset = second within the hour (0..3599)
//     kind: 0 +1 to the second, its minute and its hour (a hit), 1 -1 to the three (a take-back),
//           2/3 +1/-1 the second only, 4/5 the minute only (offset = its first second), 6/7 the
//           hour only, 8/9/10 zero the second/minute/hour (a delete);
//           11/12: kind 0 by the u8 (2..255) / u16 LE (256..65535) that follows (a busy second
//           compacted, a hit of such a cost);
//           13: a run, kind 0 for each of a stretch of seconds from the offset on: a u16 LE
//           (bits 0-11 how many seconds, 1..3600; bits 12-13 the width of a value, 4, 8 or 16
//           bits) and the values (4-bit ones two to a byte, the earlier low); a busy stretch
//           compacted, half a byte a second when each holds at most 15;
//           14: the pack's base (memcached only; first record only): a u48 LE token follows,
//           naming the item `<pack key>:b<token as 12 hex digits>` whose records come first;
//           15: a byte of kind (0..7) and a u32 LE magnitude follow (any other delta but 1).
//
// A bucket's value is its records folded in append order: v = max(0, v + delta), or 0 for a
// zero record. That is exactly what a counter holds after the same increments, decrements
// (floored at 0) and deletes, so the layout keeps the store contract key by key: every reader
// and writer sees counters, and the engine's exactness arguments carry over unchanged. Appends
// are atomic and ordered per item, like increments. Other keys (the generation, other widths,
// any key not shaped `<group>:<1|60|3600>:<i>`) stay counters.
//
// A base: memcached returns an item whole, so a pack that every check reads would cost bytes per
// check in proportion to its hour's traffic. Where a compaction is long, memcached writes it once
// to a new item, the pack's base (header and records, never changed), and rewrites the pack to
// its header, a kind-14 record naming the base, and nothing else; appends follow as ever. A reader
// folds the base's records, then the pack's own: the same values in the same order. A reader that
// keeps bases it has read (a service) reads the records appended since the last compaction, a
// few hundred bytes whatever the limit.
//
// Thread-safety: pure functions and values.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/saturating.h"
#include "hourglass/status.h"
#include "hourglass/store.h"

namespace hourglass::packed {

constexpr int64_t kPackSeconds = 3600;
constexpr size_t kPackHeaderBytes = 4;

enum class PackedLevel : uint8_t { kNone, kSecond, kMinute, kHour };

// Where a packed bucket lives: its pack, its level, and its first second in the hour.
struct PackedSlot {
  std::string pack;
  PackedLevel level = PackedLevel::kNone;
  uint16_t offset = 0;
};

// The slot of `key` if it is a second, minute or hour bucket of `group` (`<group>:1:<i>`,
// `<group>:60:<i>`, `<group>:3600:<i>`), else nullopt: the key stays a counter.
std::optional<PackedSlot> PackedSlotOf(std::string_view group, std::string_view key);

// Bases (see above). A compaction of at least kBaseAfterBytes goes to a base; a pack with a base
// is compacted again once its own records reach kBaseTailBytes.
constexpr size_t kBaseRefBytes = 8;  // the kind-14 head and its u48 token
constexpr size_t kBaseAfterBytes = 512;
constexpr size_t kBaseTailBytes = 256;

// The base a pack refers to.
struct BaseRef {
  std::string key;     // the base's item: `<pack key>:b<12 hex digits>`
  size_t tail_at = 0;  // where the pack's own records start
};
// The base `value`, the pack under `pack_key`, refers to; nullopt when it has none.
std::optional<BaseRef> BaseRefOf(std::string_view pack_key, std::string_view value);
// The key of the base of `pack_key` named by `token` (its low 48 bits).
std::string BaseKey(std::string_view pack_key, uint64_t token);
// The pack that a compaction into a base writes: a header of `expiry`, the record naming `token`.
std::string PackWithBase(uint32_t expiry, uint64_t token);
// The pack whole, ready for PackFold::Parse: `base` (header and records), then `value`'s records
// from `tail_at` on.
std::string WithBase(std::string_view base, std::string_view value, size_t tail_at);

// Appends to one pack: `records` after an add of the header when `create_ttl` > 0 (an increment
// may create the pack; a decrement or a zero never does).
struct PackAppend {
  std::string key;
  Seconds create_ttl{0};
  std::string records;
};

// The slot's index among a pack's 3,661: its 3,600 seconds, then its 60 minutes, then the hour.
size_t SlotIndex(const PackedSlot& slot);

// How one logical read is answered: the sum of a counter (gets[*counter]) and a pack's slot
// (gets[*pack] folded at `slot`), either of them absent.
struct ReadSource {
  std::optional<size_t> counter;
  std::optional<size_t> pack;
  PackedSlot slot;  // its pack key unused here: gets[*pack] is the pack
};

// A logical batch as the packed layout sends it.
struct WireBatch {
  Batch counters;                   // the counter increments, and every key to get as reads
  std::vector<PackAppend> appends;  // sent before the get
  // The counter increments that came before the batch's first packed one: sent before the
  // appends, the others after (a batch's packed increments are expected to be contiguous).
  size_t appends_at = 0;
  std::vector<uint8_t> get_is_pack;  // per counters.reads: 1 for a pack
  std::vector<ReadSource> sources;   // per logical read
};

// What a plan writes and reads. While every client of the servers switches from one layout to the
// other, each reads both: a bucket is then its counter plus its pack slot (every hit is
// written to exactly one of them, and taken back where it was written), so checks stay exact
// whichever layout wrote the hits.
struct PlanOptions {
  bool write_packs = true;  // seconds, minutes, hours written to packs (else as counters)
  bool read_both = false;   // read from both (else where they are written)
};

// Splits `batch` into counter increments, pack appends (one per pack; increments of a second, its
// minute and its hour by the same delta, in that order, share one record) and the distinct keys
// to get.
// Increments of seconds, minutes and hours stay counters without `options.write_packs`.
WireBatch PlanPacked(const Batch& batch, PlanOptions options = {});

// The appends that delete `keys` of `group` in the packed layout (a zero record per packed key;
// a pack whose every second, minute and hour is deleted is deleted whole: a reset reads every
// slot of a pack that is not one as the largest value, so it goes), and the keys to delete
// outright (counters and whole packs) into `deletes`.
// With `options.read_both`, a packed key is deleted as a counter too.
std::vector<PackAppend> PlanPackedDelete(const std::string& group,
                                         std::span<const std::string> keys, PlanOptions options,
                                         std::vector<std::string>& deletes);

// The header a pack created now with `ttl` starts with.
std::string PackHeader(Instant now, Seconds ttl);

// A pack's values folded, ready to answer its slots. Holds its busy seconds only (16 bytes per
// second hit, not the hour's 3,600), or none: a read folds one per pack it gets.
class PackFold {
 public:
  // What a fold keeps. Every busy second answers any slot and can be compacted. The minutes and
  // the hour alone answer those slots only, and cost no allocation: a read of a month's hours
  // folds hundreds of packs whose seconds it never asks for.
  enum class Depth { kSeconds, kMinutesAndHour };
  // Errors: kInternal when `value` is not a pack (naming `key`), whatever the depth.
  static Result<PackFold> Parse(std::string_view key, std::string_view value,
                                Depth depth = Depth::kSeconds);
  // The value of `slot`; a second's slot needs a fold of Depth::kSeconds.
  uint64_t Value(const PackedSlot& slot) const;
  Depth depth() const { return depth_; }
  uint32_t expiry() const { return expiry_; }
  size_t records() const { return records_; }
  // The bytes of its runs (records of kind 13), heads included.
  size_t run_bytes() const { return run_bytes_; }
  // The same values in few bytes, header kept: busy seconds close together as runs of 4-, 8- or
  // 16-bit values, or one record each, whichever is shorter per stretch (a value too wide for its
  // run adds the rest in a record); then a correction where a minute or the hour is not the sum
  // of its seconds. Needs a fold of Depth::kSeconds.
  std::string Compacted() const;
  // A lower bound of Compacted().size(), without building it: O(1). Needs Depth::kSeconds.
  size_t CompactedBytesAtLeast() const;

 private:
  PackFold() = default;
  struct Second {
    uint16_t offset;
    uint64_t value;
    // The order of seconds_, for a search by offset.
    static bool Before(const Second& s, uint16_t offset) { return s.offset < offset; }
  };
  // Busy seconds seconds_[first..last] (zeros among them), written as a run of values of
  // kRunWidthBits[width_code] bits, or as records (width_code -1), in `bytes`.
  struct Stretch {
    size_t first;
    size_t last;
    int width_code;
    size_t bytes;
  };
  std::vector<Stretch> Stretches() const;
  Stretch Cheapest(size_t first, size_t last) const;
  void PutStretch(const Stretch& stretch, std::string& out) const;
  void Apply(uint8_t kind, uint16_t offset, uint64_t d);
  // A run's `count` values from `offset` on, `values` their bytes.
  void ApplyRun(uint16_t offset, size_t count, int width_code, std::string_view values);
  // The second at `offset`, or null when no record added to it yet; with `create`, never null.
  uint64_t* SecondAt(uint16_t offset, bool create);
  Depth depth_ = Depth::kSeconds;
  uint32_t expiry_ = 0;
  uint64_t hour_ = 0;
  size_t least_half_bytes_ = 0;  // what the busy seconds cost compacted, at least, in half-bytes
  size_t records_ = 0;
  size_t run_bytes_ = 0;
  std::vector<Second> seconds_;         // by offset; the seconds ever added to (some back at 0)
  std::array<uint64_t, 60> minutes_{};  // by minute of the hour
};

// The values of `plan`'s logical reads from what its gets answered: `counters[i]` for a counter
// get, `packs[i]` for a pack get (nullopt: missing), i indexing plan.counters.reads. Bytes that are
// not a pack fail the batch (naming `server` and the key), or read as the largest value when the
// batch reads non-counters so. `folded(i, bytes, fold)` hears of every pack folded (to compact it):
// a pack none of whose seconds is read is folded without them (Depth::kMinutesAndHour).
// `stored_name(key)`, when given, is how errors name a key as the server holds it (Redis: with its
// {group} tag).
Result<std::vector<uint64_t>> ResolveReads(
    std::string_view server, const WireBatch& plan, std::span<const uint64_t> counters,
    std::span<const std::optional<std::string>> packs,
    const std::function<void(size_t, const std::string&, const PackFold&)>& folded,
    const std::function<std::string(std::string_view)>& stored_name = nullptr);

// The compaction of `pack` (as read, folded into `fold`) when it is worth writing: it has at least
// kCompactAfterRecords records and the compacted value is at most two thirds of its size (an open
// pack: each rewrite pays for itself over the reads before the next), or seven eighths of it (a
// `settled` pack, whose hits have all come: rewritten about once, then read as it stays). Known
// without building it most of the time: from a lower bound, and, for an open pack, from its runs,
// which an earlier compaction wrote and the next would write about as long. A `fold` without its
// seconds is folded again from `pack`, only when that is still in question.
constexpr size_t kCompactAfterRecords = 32;
std::optional<std::string> CompactionOf(std::string_view pack, const PackFold& fold,
                                        bool settled = false);

// Whether the pack `pack_key` is settled for a batch that appends `appends` and gets `reads`: one
// of them is a later hour's pack of the same group, so by the batch's clock (a replay's trace
// time, not the server's; a batch reads no bucket after its now) the pack's hour has passed and
// only take-backs still reach it.
bool SettledBy(std::string_view pack_key, std::span<const PackAppend> appends,
               std::span<const std::string> reads = {});

// Writes that read nothing (fire-and-forget, or applied without reads) leave nothing to compact
// what they append: a store tallies the record bytes it sent to each pack and, after
// kCompactAfterSentBytes, reads and compacts that pack itself. At most kMaxTrackedPacks packs are
// tallied (the tally starts again when full).
//
// Thread-safety: Due may be called from many threads at once.
class SentBytesTally {
 public:
  static constexpr size_t kCompactAfterSentBytes = 2048;
  static constexpr size_t kMaxTrackedPacks = 4096;
  // Adds `appends` (written to `group` by a batch that read nothing) and returns the packs due for
  // a compaction, with their groups (their tallies start again).
  void Add(const std::string& group, std::span<const PackAppend> appends,
           std::vector<std::pair<std::string, std::string>>& due);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, size_t> sent_;  // guarded by mu_
};

}  // namespace hourglass::packed
