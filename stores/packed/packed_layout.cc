#include "hourglass/packed_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <charconv>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace hourglass::packed {
namespace {

constexpr int64_t kMinutesPerPack = kPackSeconds / 60;

// A record's kind (its head's top 4 bits); kinds below kExtended add or take 1.
enum Kind : uint8_t {
  kAddAll = 0,  // the second, its minute and its hour (a hit)
  kSubAll = 1,  // a take-back of a hit
  kAddSecond = 2,
  kSubSecond = 3,
  kAddMinute = 4,
  kSubMinute = 5,
  kAddHour = 6,
  kSubHour = 7,
  kZeroSecond = 8,
  kZeroMinute = 9,
  kZeroHour = 10,
  kAddAllU8 = 11,   // kAddAll by the u8 that follows (2..255): a busy second compacted
  kAddAllU16 = 12,  // kAddAll by the u16 LE that follows (256..65535)
  kRun = 13,        // a stretch of seconds' values, each a kAddAll (RunSpec follows)
  kBase = 14,       // the pack's base: a u48 LE token follows (first record only)
  kExtended = 15,   // a byte of kind (kAddAll..kSubHour) and a u32 magnitude follow
};

// A run's u16 LE after its head: how many seconds it holds (bits 0-11, 1..3600, from the head's
// offset on) and the width of each value (bits 12-13: 4, 8 or 16 bits; values of 4 bits two to a
// byte, the earlier second in the low half). Bits 14-15 are 0.
constexpr int kRunWidthBits[] = {4, 8, 16};
constexpr uint64_t RunMax(int width_code) { return (uint64_t{1} << kRunWidthBits[width_code]) - 1; }
constexpr size_t RunValueBytes(int width_code, size_t count) {
  return (count * static_cast<size_t>(kRunWidthBits[width_code]) + 7) / 8;
}
constexpr size_t kRunHeadBytes = 4;  // head and RunSpec
// Busy seconds at most this far apart may share a run (the zeros between them cost less than a
// new run's head, at 4 bits a value).
constexpr uint16_t kRunMaxGap = 8;

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

void PutU16(std::string& out, uint16_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>(v >> 8);
}

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((v >> shift) & 0xff);
}

uint16_t GetU16(std::string_view in) {
  return static_cast<uint16_t>(static_cast<unsigned char>(in[0]) | static_cast<unsigned char>(in[1])
                                                                       << 8);
}

uint32_t GetU32(std::string_view in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
  return v;
}

// Records adding (or taking, per `kind`) `magnitude` at `offset`, split in u32-sized parts; a
// zero record has no magnitude.
void PutRecords(std::string& out, uint8_t kind, uint16_t offset, uint64_t magnitude) {
  if (kind >= kZeroSecond || magnitude == 1) {
    PutU16(out, static_cast<uint16_t>(offset | kind << 12));
    return;
  }
  if (kind == kAddAll && magnitude >= 2 && magnitude <= 0xffff) {
    const bool u8 = magnitude <= 0xff;
    PutU16(out, static_cast<uint16_t>(offset | (u8 ? kAddAllU8 : kAddAllU16) << 12));
    out += static_cast<char>(magnitude & 0xff);
    if (!u8) out += static_cast<char>(magnitude >> 8);
    return;
  }
  while (magnitude > 0) {
    const uint32_t part =
        static_cast<uint32_t>(std::min<uint64_t>(magnitude, std::numeric_limits<uint32_t>::max()));
    PutU16(out, static_cast<uint16_t>(offset | kExtended << 12));
    out += static_cast<char>(kind);
    PutU32(out, part);
    magnitude -= part;
  }
}

// The bytes PutRecords(out, kAddAll, offset, magnitude) appends, for magnitude > 0.
size_t AddAllBytes(uint64_t magnitude) {
  if (magnitude == 1) return 2;
  if (magnitude <= 0xffff) return magnitude <= 0xff ? 3 : 4;
  constexpr uint64_t kPart = std::numeric_limits<uint32_t>::max();
  return 7 * static_cast<size_t>((magnitude + kPart - 1) / kPart);
}

uint64_t Magnitude(int64_t delta) {
  return delta < 0 ? static_cast<uint64_t>(-(delta + 1)) + 1 : static_cast<uint64_t>(delta);
}

// How long a pack must live for `slot` to live its TTL from its own creation: the pack is created
// at its first hit, maybe before the slot's second or minute starts (an hour starts with it).
Seconds PackTtl(const Increment& inc, const PackedSlot& slot) {
  return slot.level == PackedLevel::kHour ? inc.ttl : inc.ttl + Seconds{kPackSeconds - slot.offset};
}

constexpr uint8_t AddKind(PackedLevel level) {
  return level == PackedLevel::kSecond ? kAddSecond
                                       : (level == PackedLevel::kMinute ? kAddMinute : kAddHour);
}
constexpr uint8_t ZeroKind(PackedLevel level) {
  return level == PackedLevel::kSecond ? kZeroSecond
                                       : (level == PackedLevel::kMinute ? kZeroMinute : kZeroHour);
}
}  // namespace

size_t SlotIndex(const PackedSlot& slot) {
  switch (slot.level) {
    case PackedLevel::kSecond:
      return slot.offset;
    case PackedLevel::kMinute:
      return size_t(kPackSeconds) + slot.offset / 60;
    case PackedLevel::kHour:
    case PackedLevel::kNone:
      break;
  }
  return size_t(kPackSeconds + kMinutesPerPack);
}

namespace {

constexpr size_t kSlots = size_t(kPackSeconds + kMinutesPerPack + 1);

PackAppend& AppendFor(std::vector<PackAppend>& appends,
                      std::unordered_map<std::string, size_t>& index, const std::string& pack) {
  auto [it, inserted] = index.try_emplace(pack, appends.size());
  if (inserted) appends.push_back(PackAppend{pack, Seconds{0}, {}});
  return appends[it->second];
}

void Grow(PackAppend& append, Seconds ttl) { append.create_ttl = std::max(append.create_ttl, ttl); }

// Adds the gets for `batch.reads` to `wire`.
void PlanReads(const Batch& batch, PlanOptions options, WireBatch& wire) {
  std::unordered_map<std::string, size_t> index;
  const auto get = [&](const std::string& key, bool pack) {
    auto [it, inserted] = index.try_emplace(key, wire.counters.reads.size());
    if (inserted) {
      wire.counters.reads.push_back(key);
      wire.get_is_pack.push_back(pack ? 1 : 0);
    }
    return it->second;
  };
  wire.sources.reserve(batch.reads.size());
  for (const std::string& key : batch.reads) {
    std::optional<PackedSlot> slot = PackedSlotOf(batch.group, key);
    ReadSource source;
    if (!slot || !options.write_packs || options.read_both) source.counter = get(key, false);
    if (slot && (options.write_packs || options.read_both)) {
      source.pack = get(slot->pack, true);
      source.slot = std::move(*slot);
    }
    wire.sources.push_back(std::move(source));
  }
}

}  // namespace

std::optional<PackedSlot> PackedSlotOf(std::string_view group, std::string_view key) {
  if (key.size() <= group.size() + 1 || !key.starts_with(group) || key[group.size()] != ':') {
    return std::nullopt;
  }
  const std::string_view rest = key.substr(group.size() + 1);
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  struct Width {
    std::string_view text;
    PackedLevel level;
    int64_t seconds;
  };
  static constexpr Width kWidths[] = {{"1", PackedLevel::kSecond, 1},
                                      {"60", PackedLevel::kMinute, 60},
                                      {"3600", PackedLevel::kHour, 3600}};
  const std::string_view width = rest.substr(0, colon);
  const Width* w = std::find_if(std::begin(kWidths), std::end(kWidths),
                                [&](const Width& c) { return c.text == width; });
  if (w == std::end(kWidths)) return std::nullopt;
  const std::optional<int64_t> index = ParseInt(rest.substr(colon + 1));
  if (!index || *index < 0 || *index > std::numeric_limits<int64_t>::max() / w->seconds) {
    return std::nullopt;
  }
  const int64_t start = *index * w->seconds;  // >= 0: plain division floors
  const int64_t hour = start / kPackSeconds;
  return PackedSlot{fmt::format("{}:p:{}", group, hour), w->level,
                    static_cast<uint16_t>(start - hour * kPackSeconds)};
}

WireBatch PlanPacked(const Batch& batch, PlanOptions options) {
  WireBatch wire;
  wire.counters.group = batch.group;
  wire.counters.non_counters_read_as_max = batch.non_counters_read_as_max;
  std::unordered_map<std::string, size_t> index;
  const std::vector<Increment>& incs = batch.increments;
  for (size_t i = 0; i < incs.size(); ++i) {
    std::optional<PackedSlot> slot =
        options.write_packs ? PackedSlotOf(batch.group, incs[i].key) : std::nullopt;
    if (!slot) {
      wire.counters.increments.push_back(incs[i]);
      if (wire.appends.empty()) wire.appends_at = wire.counters.increments.size();
      continue;
    }
    PackAppend& append = AppendFor(wire.appends, index, slot->pack);
    const bool add = incs[i].delta > 0;
    if (add) Grow(append, PackTtl(incs[i], *slot));
    if (incs[i].delta == 0) continue;
    // A second followed by its own minute and hour with the same delta (a hit, a take-back):
    // one record.
    if (slot->level == PackedLevel::kSecond && i + 2 < incs.size() &&
        incs[i + 1].delta == incs[i].delta && incs[i + 2].delta == incs[i].delta) {
      const std::optional<PackedSlot> minute = PackedSlotOf(batch.group, incs[i + 1].key);
      const std::optional<PackedSlot> hour = PackedSlotOf(batch.group, incs[i + 2].key);
      if (minute && hour && minute->level == PackedLevel::kMinute &&
          hour->level == PackedLevel::kHour && minute->pack == slot->pack &&
          hour->pack == slot->pack && minute->offset == slot->offset / 60 * 60) {
        if (add) Grow(append, PackTtl(incs[i + 1], *minute));
        if (add) Grow(append, PackTtl(incs[i + 2], *hour));
        PutRecords(append.records, add ? kAddAll : kSubAll, slot->offset, Magnitude(incs[i].delta));
        i += 2;
        continue;
      }
    }
    PutRecords(append.records, static_cast<uint8_t>(AddKind(slot->level) + (add ? 0 : 1)),
               slot->offset, Magnitude(incs[i].delta));
  }
  std::erase_if(wire.appends, [](const PackAppend& a) { return a.records.empty(); });
  PlanReads(batch, options, wire);
  return wire;
}

std::vector<PackAppend> PlanPackedDelete(const std::string& group,
                                         std::span<const std::string> keys, PlanOptions options,
                                         std::vector<std::string>& deletes) {
  std::vector<PackAppend> appends;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::vector<bool>> seen;  // per append: the slots deleted
  for (const std::string& key : keys) {
    std::optional<PackedSlot> slot = PackedSlotOf(group, key);
    if (!slot || options.read_both) deletes.push_back(key);  // a counter, or maybe one too
    if (!slot) continue;
    PackAppend& append = AppendFor(appends, index, slot->pack);
    if (seen.size() < appends.size()) seen.emplace_back(kSlots, false);
    std::vector<bool>& slots = seen[index[slot->pack]];
    if (slots[SlotIndex(*slot)]) continue;
    slots[SlotIndex(*slot)] = true;
    PutRecords(append.records, ZeroKind(slot->level), slot->offset, 0);
  }
  // Every slot of a pack deleted: delete the item itself (a reset frees the memory).
  std::vector<PackAppend> partial;
  for (size_t i = 0; i < appends.size(); ++i) {
    if (std::all_of(seen[i].begin(), seen[i].end(), [](bool b) { return b; })) {
      deletes.push_back(appends[i].key);
    } else {
      partial.push_back(std::move(appends[i]));
    }
  }
  return partial;
}

std::optional<BaseRef> BaseRefOf(std::string_view pack_key, std::string_view value) {
  if (value.size() < kPackHeaderBytes + kBaseRefBytes) return std::nullopt;
  const std::string_view record = value.substr(kPackHeaderBytes, kBaseRefBytes);
  if (GetU16(record) != kBase << 12) return std::nullopt;
  uint64_t token = 0;
  for (size_t i = kBaseRefBytes; i-- > 2;)
    token = token << 8 | static_cast<unsigned char>(record[i]);
  return BaseRef{BaseKey(pack_key, token), kPackHeaderBytes + kBaseRefBytes};
}

std::string BaseKey(std::string_view pack_key, uint64_t token) {
  return fmt::format("{}:b{:012x}", pack_key, token & 0xffff'ffff'ffffu);
}

std::string PackWithBase(uint32_t expiry, uint64_t token) {
  std::string out;
  PutU32(out, expiry);
  PutU16(out, static_cast<uint16_t>(kBase << 12));
  for (int shift = 0; shift < 48; shift += 8) out += static_cast<char>((token >> shift) & 0xff);
  return out;
}

std::string WithBase(std::string_view base, std::string_view value, size_t tail_at) {
  std::string out;
  out.reserve(base.size() + value.size() - std::min(tail_at, value.size()));
  out += base;
  if (tail_at < value.size()) out += value.substr(tail_at);
  return out;
}

std::string PackHeader(Instant now, Seconds ttl) {
  std::string header;
  const int64_t expiry = ToUnix(now) + ttl.count();
  PutU32(header, static_cast<uint32_t>(
                     std::clamp<int64_t>(expiry, 0, std::numeric_limits<uint32_t>::max())));
  return header;
}

Result<PackFold> PackFold::Parse(std::string_view key, std::string_view value, Depth depth) {
  const auto bad = [&](std::string_view why) {
    return Error(ErrorCode::kInternal,
                 fmt::format("the value under \"{}\" is not a pack of hourglass's packed layout "
                             "({}; another client wrote it?); reset the feature to delete it",
                             key, why));
  };
  if (value.size() < kPackHeaderBytes) return bad("shorter than its header");
  PackFold fold;
  fold.depth_ = depth;
  fold.expiry_ = GetU32(value);
  if (depth == Depth::kSeconds) {
    // At most a second per record: one allocation (most records add to a second of their own).
    fold.seconds_.reserve(std::min<size_t>((value.size() - kPackHeaderBytes) / 2, kPackSeconds));
  }
  size_t at = kPackHeaderBytes;
  while (at < value.size()) {
    if (value.size() - at < 2) return bad("a record cut short");
    const uint16_t head = static_cast<uint16_t>(static_cast<unsigned char>(value[at]) |
                                                static_cast<unsigned char>(value[at + 1]) << 8);
    at += 2;
    const uint16_t offset = head & 0x0fff;
    uint8_t kind = static_cast<uint8_t>(head >> 12);
    if (offset >= kPackSeconds) return bad("a record's second is past the hour");
    uint64_t d = 1;
    if (kind == kExtended) {
      if (value.size() - at < 5) return bad("a record cut short");
      kind = static_cast<uint8_t>(value[at]);
      if (kind > kSubHour) return bad("an unknown record");
      d = GetU32(value.substr(at + 1));
      at += 5;
    } else if (kind == kRun) {
      if (value.size() - at < 2) return bad("a record cut short");
      const uint16_t spec = GetU16(value.substr(at));
      const size_t count = spec & 0x0fff;
      const int width_code = spec >> 12;
      if (count == 0 || width_code > 2) return bad("an unknown record");
      if (offset + count > kPackSeconds) return bad("a record's second is past the hour");
      const size_t bytes = RunValueBytes(width_code, count);
      if (value.size() - at - 2 < bytes) return bad("a record cut short");
      fold.ApplyRun(offset, count, width_code, value.substr(at + 2, bytes));
      fold.run_bytes_ += kRunHeadBytes + bytes;
      at += 2 + bytes;
      ++fold.records_;
      continue;
    } else if (kind == kBase) {
      return bad("it names a base that was not read with it");
    } else if (kind == kAddAllU8 || kind == kAddAllU16) {
      const size_t width = kind == kAddAllU8 ? 1 : 2;
      if (value.size() - at < width) return bad("a record cut short");
      d = static_cast<unsigned char>(value[at]);
      if (width == 2) d |= static_cast<uint64_t>(static_cast<unsigned char>(value[at + 1])) << 8;
      kind = kAddAll;
      at += width;
    } else if (kind > kZeroHour) {
      return bad("an unknown record");
    }
    fold.Apply(kind, offset, d);
    ++fold.records_;
  }
  return fold;
}

namespace {

// The fewest half-bytes any compacted form spends on a second of value `v`: half a byte in a run
// of 4-bit values, a byte in one of 8 bits, 2 bytes beyond (a value of 16 bits, or a record).
size_t HalfBytesAtLeast(uint64_t v) {
  if (v == 0) return 0;
  if (v <= RunMax(0)) return 1;
  return v <= RunMax(1) ? 2 : 4;
}

}  // namespace

uint64_t* PackFold::SecondAt(uint16_t offset, bool create) {
  // Records come mostly in time order: a second after the last, or the last, is the common case.
  if (seconds_.empty() || seconds_.back().offset < offset) {
    if (!create) return nullptr;
    seconds_.push_back(Second{offset, 0});
    return &seconds_.back().value;
  }
  if (seconds_.back().offset == offset) return &seconds_.back().value;
  const auto at = std::lower_bound(seconds_.begin(), seconds_.end(), offset, Second::Before);
  if (at->offset == offset) return &at->value;
  return create ? &seconds_.insert(at, Second{offset, 0})->value : nullptr;
}

void PackFold::Apply(uint8_t kind, uint16_t offset, uint64_t d) {
  uint64_t& minute = minutes_[offset / 60];
  const bool touches_second = kind == kAddAll || kind == kSubAll || kind == kAddSecond ||
                              kind == kSubSecond || kind == kZeroSecond;
  uint64_t none = 0;  // a second no record added to (or not kept): 0 to this record
  uint64_t* found = touches_second && depth_ == Depth::kSeconds
                        ? SecondAt(offset, kind == kAddAll || kind == kAddSecond)
                        : nullptr;
  uint64_t& second = found != nullptr ? *found : none;
  const uint64_t before = second;
  const auto add = [d](uint64_t& v) { v = SaturatingAdd(v, d); };
  const auto sub = [d](uint64_t& v) { v = v > d ? v - d : 0; };
  switch (kind) {
    case kAddAll:
      add(second), add(minute), add(hour_);
      break;
    case kSubAll:
      sub(second), sub(minute), sub(hour_);
      break;
    case kAddSecond:
      add(second);
      break;
    case kSubSecond:
      sub(second);
      break;
    case kAddMinute:
      add(minute);
      break;
    case kSubMinute:
      sub(minute);
      break;
    case kAddHour:
      add(hour_);
      break;
    case kSubHour:
      sub(hour_);
      break;
    case kZeroSecond:
      second = 0;
      break;
    case kZeroMinute:
      minute = 0;
      break;
    case kZeroHour:
      hour_ = 0;
      break;
  }
  if (found != nullptr) {
    least_half_bytes_ = least_half_bytes_ - HalfBytesAtLeast(before) + HalfBytesAtLeast(second);
  }
}

namespace {

// The i-th value of a run of kRunWidthBits[width_code]-bit values `values`.
uint64_t RunValue(std::string_view values, int width_code, size_t i) {
  switch (width_code) {
    case 0:
      return static_cast<unsigned char>(values[i / 2]) >> (i % 2 * 4) & 0x0f;
    case 1:
      return static_cast<unsigned char>(values[i]);
    default:
      return GetU16(values.substr(2 * i));
  }
}

// The values of `word` (8 bytes of a run of kRunWidthBits[width_code]-bit values, little-endian)
// added pairwise into two 32-bit lanes, each at most 131,070.
uint64_t LaneSums(uint64_t word, int width_code) {
  constexpr uint64_t kNibbles = 0x0f0f0f0f0f0f0f0f, kBytes = 0x00ff00ff00ff00ff;
  constexpr uint64_t kHalves = 0x0000ffff0000ffff;
  if (width_code == 0) word = (word & kNibbles) + (word >> 4 & kNibbles);
  if (width_code <= 1) word = (word & kBytes) + (word >> 8 & kBytes);
  return (word & kHalves) + (word >> 16 & kHalves);
}

// The sum of values [first, first + count) of a run (at most 4,095 values: no lane overflows),
// eight bytes at a time; a nibble alone at either end one by one.
uint64_t RunSum(std::string_view values, int width_code, size_t first, size_t count) {
  size_t i = first, end = first + count;
  uint64_t sum = 0;
  if (width_code == 0 && i < end && i % 2 == 1) sum += RunValue(values, 0, i++);
  if (width_code == 0 && i < end && end % 2 == 1) sum += RunValue(values, 0, --end);
  if constexpr (std::endian::native != std::endian::little) {
    for (; i < end; ++i) sum += RunValue(values, width_code, i);
    return sum;
  }
  const char* bytes = values.data() + (i << width_code) / 2;
  size_t left = ((end - i) << width_code) / 2;
  uint64_t lanes = 0;
  while (left > 0) {
    const size_t n = std::min<size_t>(left, 8);
    uint64_t word = 0;  // a last word's missing bytes read as zeros
    std::memcpy(&word, bytes, n);
    lanes += LaneSums(word, width_code);
    bytes += n;
    left -= n;
  }
  return sum + (lanes & 0xffffffff) + (lanes >> 32);
}

}  // namespace

void PackFold::ApplyRun(uint16_t offset, size_t count, int width_code, std::string_view values) {
  if (depth_ == Depth::kMinutesAndHour) {
    // A minute's sum at once: a run holds at most 4,095 values of 16 bits, so no sum overflows,
    // and adding it saturated is adding its values one by one saturated.
    for (size_t i = 0; i < count;) {
      const size_t minute = (offset + i) / 60;
      const size_t minute_end = std::min(count, minute * 60 + 60 - offset);
      const uint64_t sum = RunSum(values, width_code, i, minute_end - i);
      minutes_[minute] = SaturatingAdd(minutes_[minute], sum);
      hour_ = SaturatingAdd(hour_, sum);
      i = minute_end;
    }
    return;
  }
  // A compacted pack's runs come first and in order: its seconds are new, appended as they come.
  const bool new_seconds = seconds_.empty() || seconds_.back().offset < offset;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t v = RunValue(values, width_code, i);
    if (v == 0) continue;
    const uint16_t at = static_cast<uint16_t>(offset + i);
    if (!new_seconds) {
      Apply(kAddAll, at, v);
      continue;
    }
    seconds_.push_back(Second{at, v});
    least_half_bytes_ += HalfBytesAtLeast(v);
    minutes_[at / 60] = SaturatingAdd(minutes_[at / 60], v);
    hour_ = SaturatingAdd(hour_, v);
  }
}

size_t PackFold::CompactedBytesAtLeast() const {
  assert(depth_ == Depth::kSeconds);
  return kPackHeaderBytes + (least_half_bytes_ + 1) / 2;
}

uint64_t PackFold::Value(const PackedSlot& slot) const {
  switch (slot.level) {
    case PackedLevel::kSecond: {
      assert(depth_ == Depth::kSeconds);
      const auto at =
          std::lower_bound(seconds_.begin(), seconds_.end(), slot.offset, Second::Before);
      return at != seconds_.end() && at->offset == slot.offset ? at->value : 0;
    }
    case PackedLevel::kMinute:
      return minutes_[slot.offset / 60];
    default:
      return hour_;
  }
}

PackFold::Stretch PackFold::Cheapest(size_t first, size_t last) const {
  const uint16_t span = static_cast<uint16_t>(seconds_[last].offset - seconds_[first].offset + 1);
  size_t records = 0;
  std::array<size_t, 3> runs{};
  for (int w = 0; w < 3; ++w) runs[w] = kRunHeadBytes + RunValueBytes(w, span);
  for (size_t i = first; i <= last; ++i) {
    const uint64_t v = seconds_[i].value;
    if (v == 0) continue;
    records += AddAllBytes(v);
    for (int w = 0; w < 3; ++w) {
      if (v > RunMax(w)) runs[w] += AddAllBytes(v - RunMax(w));
    }
  }
  Stretch best{first, last, -1, records};
  for (int w = 0; w < 3; ++w) {
    if (runs[w] < best.bytes) best = Stretch{first, last, w, runs[w]};
  }
  return best;
}

std::vector<PackFold::Stretch> PackFold::Stretches() const {
  std::vector<Stretch> stretches;
  for (size_t i = 0; i < seconds_.size(); ++i) {
    if (seconds_[i].value == 0) continue;
    size_t last = i;  // the stretch's last busy second so far
    for (size_t j = i + 1; j < seconds_.size(); ++j) {
      if (seconds_[j].value == 0) continue;
      if (seconds_[j].offset - seconds_[last].offset - 1 > kRunMaxGap) break;
      last = j;
    }
    stretches.push_back(Cheapest(i, last));
    i = last;
  }
  return stretches;
}

void PackFold::PutStretch(const Stretch& stretch, std::string& out) const {
  if (stretch.width_code < 0) {
    for (size_t i = stretch.first; i <= stretch.last; ++i) {
      if (seconds_[i].value > 0) PutRecords(out, kAddAll, seconds_[i].offset, seconds_[i].value);
    }
    return;
  }
  const int w = stretch.width_code;
  const uint16_t first = seconds_[stretch.first].offset;
  const size_t span = seconds_[stretch.last].offset - first + 1;
  PutU16(out, static_cast<uint16_t>(first | kRun << 12));
  PutU16(out, static_cast<uint16_t>(span | w << 12));
  const size_t values = out.size();
  out.append(RunValueBytes(w, span), '\0');
  for (size_t i = stretch.first; i <= stretch.last; ++i) {
    const uint64_t v = std::min(seconds_[i].value, RunMax(w));
    const size_t k = seconds_[i].offset - first;
    if (w == 0) out[values + k / 2] = static_cast<char>(out[values + k / 2] | v << (k % 2 * 4));
    if (w == 1) out[values + k] = static_cast<char>(v);
    if (w == 2) out[values + 2 * k] = static_cast<char>(v & 0xff);
    if (w == 2) out[values + 2 * k + 1] = static_cast<char>(v >> 8);
  }
  for (size_t i = stretch.first; i <= stretch.last; ++i) {  // what a value's width left out
    if (seconds_[i].value > RunMax(w)) {
      PutRecords(out, kAddAll, seconds_[i].offset, seconds_[i].value - RunMax(w));
    }
  }
}

std::string PackFold::Compacted() const {
  assert(depth_ == Depth::kSeconds);
  const std::vector<Stretch> stretches = Stretches();
  std::string out;
  size_t bytes = kPackHeaderBytes;
  for (const Stretch& s : stretches) bytes += s.bytes;
  out.reserve(bytes + 8);
  PutU32(out, expiry_);
  for (const Stretch& s : stretches) PutStretch(s, out);
  uint64_t total = 0;
  std::array<uint64_t, kMinutesPerPack> sums{};
  for (const Second& s : seconds_) {
    total = SaturatingAdd(total, s.value);
    sums[s.offset / 60] = SaturatingAdd(sums[s.offset / 60], s.value);
  }
  // Fold order: every minute and the hour first get the sum of their seconds (all additions),
  // then their corrections, so no floor is met on the way to their values.
  for (uint16_t m = 0; m < kMinutesPerPack; ++m) {
    const uint64_t sum = sums[m];
    const uint16_t offset = static_cast<uint16_t>(m * 60);
    if (minutes_[m] > sum) PutRecords(out, kAddMinute, offset, minutes_[m] - sum);
    if (minutes_[m] < sum) PutRecords(out, kSubMinute, offset, sum - minutes_[m]);
  }
  if (hour_ > total) PutRecords(out, kAddHour, 0, hour_ - total);
  if (hour_ < total) PutRecords(out, kSubHour, 0, total - hour_);
  return out;
}

Result<std::vector<uint64_t>> ResolveReads(
    std::string_view server, const WireBatch& plan, std::span<const uint64_t> counters,
    std::span<const std::optional<std::string>> packs,
    const std::function<void(size_t, const std::string&, const PackFold&)>& folded,
    const std::function<std::string(std::string_view)>& stored_name) {
  std::vector<std::optional<PackFold>> folds(plan.counters.reads.size());
  std::vector<uint8_t> seconds_read(plan.counters.reads.size(), 0);  // by pack get
  for (const ReadSource& source : plan.sources) {
    if (source.pack && source.slot.level == PackedLevel::kSecond) seconds_read[*source.pack] = 1;
  }
  std::vector<uint64_t> values;
  values.reserve(plan.sources.size());
  for (const ReadSource& source : plan.sources) {
    uint64_t value = source.counter ? counters[*source.counter] : 0;
    const std::optional<std::string>* pack = source.pack ? &packs[*source.pack] : nullptr;
    if (pack != nullptr && pack->has_value()) {
      std::optional<PackFold>& fold = folds[*source.pack];
      if (!fold) {
        const std::string& key = plan.counters.reads[*source.pack];
        const PackFold::Depth depth = seconds_read[*source.pack] ? PackFold::Depth::kSeconds
                                                                 : PackFold::Depth::kMinutesAndHour;
        Result<PackFold> parsed =
            PackFold::Parse(stored_name ? stored_name(key) : key, **pack, depth);
        if (!parsed.ok() && !plan.counters.non_counters_read_as_max) {
          return Error(parsed.error().code(),
                       fmt::format("{}: {}", server, parsed.error().message()));
        }
        if (parsed.ok()) {
          fold = std::move(*parsed);
          if (folded) folded(*source.pack, **pack, *fold);
        }
      }
      value = SaturatingAdd(value,
                            fold ? fold->Value(source.slot) : std::numeric_limits<uint64_t>::max());
    }
    values.push_back(value);
  }
  return values;
}

namespace {

// A compaction pays when it is at most num/den of the pack.
struct Gain {
  size_t num, den;
  bool Pays(size_t compacted, size_t pack) const { return compacted * den <= pack * num; }
};
constexpr Gain kOpenGain{2, 3};
constexpr Gain kSettledGain{7, 8};

// The hour index of a pack key ("<group>:p:<hour>"), and the key before it.
std::optional<std::pair<std::string_view, int64_t>> PackHourOf(std::string_view key) {
  const size_t at = key.rfind(":p:");
  if (at == std::string_view::npos) return std::nullopt;
  const std::optional<int64_t> hour = ParseInt(key.substr(at + 3));
  if (!hour) return std::nullopt;
  return std::pair{key.substr(0, at), *hour};
}

}  // namespace

std::optional<std::string> CompactionOf(std::string_view pack, const PackFold& fold, bool settled) {
  if (fold.records() < kCompactAfterRecords) return std::nullopt;
  const Gain gain = settled ? kSettledGain : kOpenGain;
  // Runs come from a compaction, and come out of the next about as long: an open pack read at
  // every check waits until its appends can pay (one whose runs' seconds were since taken back
  // waits a little). A settled pack is read rarely: it is built.
  if (!settled && !gain.Pays(fold.run_bytes(), pack.size())) return std::nullopt;
  if (fold.depth() != PackFold::Depth::kSeconds) {
    Result<PackFold> full = PackFold::Parse("", pack);  // parsed once already: cannot fail
    return full.ok() ? CompactionOf(pack, *full, settled) : std::nullopt;
  }
  if (!gain.Pays(fold.CompactedBytesAtLeast(), pack.size())) return std::nullopt;  // build nothing
  std::string compact = fold.Compacted();
  if (!gain.Pays(compact.size(), pack.size())) return std::nullopt;
  return compact;
}

bool SettledBy(std::string_view pack_key, std::span<const PackAppend> appends,
               std::span<const std::string> reads) {
  const auto pack = PackHourOf(pack_key);
  if (!pack) return false;
  const auto later = [&](std::string_view key) {
    const auto other = PackHourOf(key);
    return other && other->first == pack->first && other->second > pack->second;
  };
  return std::any_of(appends.begin(), appends.end(),
                     [&](const PackAppend& append) { return later(append.key); }) ||
         std::any_of(reads.begin(), reads.end(), later);
}

void SentBytesTally::Add(const std::string& group, std::span<const PackAppend> appends,
                         std::vector<std::pair<std::string, std::string>>& due) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const PackAppend& append : appends) {
    if (sent_.size() >= kMaxTrackedPacks && !sent_.contains(append.key)) sent_.clear();
    size_t& bytes = sent_[append.key];
    bytes += append.records.size();
    if (bytes < kCompactAfterSentBytes) continue;
    bytes = 0;
    due.emplace_back(group, append.key);
  }
}

}  // namespace hourglass::packed
