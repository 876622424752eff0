// Internal to the memcached store: the packed layout, where one feature's second and minute
// buckets of one hour live in one memcached item, a log of 2-byte records, instead of one counter
// item each (an item costs ~100 bytes of header and key whatever its value).
//
//   pack key   <group>:p:<hour index>            (hour index = floor(t / 3600))
//   value      u32 LE expiry (Unix seconds, as created), then records, appended atomically
//   record     u16 LE head = offset | kind << 12; offset = second within the hour (0..3599)
//     kind & 7: 0 +d to the second and its minute (a hit), 1 -d to both (a take-back),
//               2 +d second only, 3 -d second only, 4 +d minute only, 5 -d minute only
//               (offset = the minute's first second), 6 zero the second, 7 zero the minute
//     kind & 8: d follows as u32 LE; otherwise d = 1. Kinds 14 and 15 are invalid.
//
// A bucket's value is its records folded in append order: v = max(0, v + delta), or 0 for a
// zero record. That is exactly what a counter holds after the same increments, decrements
// (floored at 0) and deletes, so the layout keeps the store contract key by key: every reader
// and writer sees counters, and the engine's exactness arguments carry over unchanged. Appends
// are atomic and ordered per item, like increments. Other keys (hours, the generation, any
// key not shaped `<group>:1:<i>` or `<group>:60:<i>`) stay counters.
//
// Thread-safety: pure functions and values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/status.h"
#include "hourglass/store.h"

namespace hourglass::memcached {

constexpr int64_t kPackSeconds = 3600;
constexpr size_t kPackHeaderBytes = 4;

// Where a packed bucket lives: its pack, minute or second, and its first second in the hour.
struct PackedSlot {
  std::string pack;
  bool minute = false;
  uint16_t offset = 0;
};

// The slot of `key` if it is a second or minute bucket of `group` (`<group>:1:<i>`,
// `<group>:60:<i>`), else nullopt: the key stays a counter.
std::optional<PackedSlot> PackedSlotOf(std::string_view group, std::string_view key);

// Appends to one pack: `records` after an add of the header when `create_ttl` > 0 (an increment
// may create the pack; a decrement or a zero never does).
struct PackAppend {
  std::string key;
  Seconds create_ttl{0};
  std::string records;
};

// How one logical read is answered: the sum of a counter (gets[*counter]) and a pack's slot
// (gets[*pack] folded at `slot`), either of them absent.
struct ReadSource {
  std::optional<size_t> counter;
  std::optional<size_t> pack;
  PackedSlot slot;  // its pack key unused here: gets[*pack] is the pack
};

// A logical batch as the packed layout sends it.
struct WireBatch {
  Batch counters;                    // the counter increments, and every key to get as reads
  std::vector<PackAppend> appends;   // sent after the counter increments, before the get
  std::vector<uint8_t> get_is_pack;  // per counters.reads: 1 for a pack
  std::vector<ReadSource> sources;   // per logical read
};

// What a plan writes and reads. While every client of the servers switches from one layout to the
// other, each reads both: a second or minute is then its counter plus its pack slot (every hit is
// written to exactly one of them, and taken back where it was written), so checks stay exact
// whichever layout wrote the hits.
struct PlanOptions {
  bool write_packs = true;  // seconds and minutes written to packs (else as counters)
  bool read_both = false;   // seconds and minutes read from both (else where they are written)
};

// Splits `batch` into counter increments, pack appends (one per pack, increments of a second
// and its minute by the same delta sharing one record) and the distinct keys to get.
// Increments of seconds and minutes stay counters without `options.write_packs`.
WireBatch PlanPacked(const Batch& batch, PlanOptions options = {});

// The appends that delete `keys` of `group` in the packed layout (a zero record per packed key;
// a pack whose every second and minute is deleted is deleted whole, as is a pack not readable
// as one), and the keys to delete outright (counters and whole packs) into `deletes`.
std::vector<PackAppend> PlanPackedDelete(const std::string& group,
                                         std::span<const std::string> keys,
                                         std::vector<std::string>& deletes);

// The header a pack created now with `ttl` starts with.
std::string PackHeader(Instant now, Seconds ttl);

// A pack's values folded, ready to answer any of its slots.
class PackFold {
 public:
  // Errors: kInternal when `value` is not a pack (naming `key`).
  static Result<PackFold> Parse(std::string_view key, std::string_view value);
  uint64_t Value(const PackedSlot& slot) const;
  uint32_t expiry() const { return expiry_; }
  size_t records() const { return records_; }
  // The same values in the fewest records (one per non-empty second, with a minute correction
  // where a minute is not the sum of its seconds), header kept.
  std::string Compacted() const;

 private:
  PackFold() = default;
  uint32_t expiry_ = 0;
  size_t records_ = 0;
  std::vector<uint64_t> seconds_;  // kPackSeconds
  std::vector<uint64_t> minutes_;  // 60
};

}  // namespace hourglass::memcached
