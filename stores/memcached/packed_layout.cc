#include "packed_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

namespace hourglass::memcached {
namespace {

constexpr int64_t kMinutesPerPack = kPackSeconds / 60;

enum Kind : uint16_t {
  kAddBoth = 0,
  kSubBoth = 1,
  kAddSecond = 2,
  kSubSecond = 3,
  kAddMinute = 4,
  kSubMinute = 5,
  kZeroSecond = 6,
  kZeroMinute = 7,
  kLong = 8,  // a u32 magnitude follows
};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

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

uint32_t GetU32(std::string_view in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
  return v;
}

// Records adding `magnitude` (>= 0) with `kind` at `offset`, split in u32-sized parts.
void PutRecords(std::string& out, uint16_t kind, uint16_t offset, uint64_t magnitude) {
  if (kind == kZeroSecond || kind == kZeroMinute || magnitude == 1) {
    PutU16(out, static_cast<uint16_t>(offset | kind << 12));
    return;
  }
  while (magnitude > 0) {
    const uint32_t part =
        static_cast<uint32_t>(std::min<uint64_t>(magnitude, std::numeric_limits<uint32_t>::max()));
    PutU16(out, static_cast<uint16_t>(offset | (kind | kLong) << 12));
    PutU32(out, part);
    magnitude -= part;
  }
}

uint64_t Magnitude(int64_t delta) {
  return delta < 0 ? static_cast<uint64_t>(-(delta + 1)) + 1 : static_cast<uint64_t>(delta);
}

// How long a pack must live for the bucket starting at `offset` to live `ttl` from its own start:
// the pack is created at its first hit, maybe before the bucket's hour second.
Seconds PackTtl(const Increment& inc, uint16_t offset) {
  return inc.ttl + Seconds{kPackSeconds - offset};
}

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
  const std::string_view width = rest.substr(0, colon);
  if (width != "1" && width != "60") return std::nullopt;
  const std::optional<int64_t> index = ParseInt(rest.substr(colon + 1));
  if (!index || *index < 0 || *index > std::numeric_limits<int64_t>::max() / 60) {
    return std::nullopt;
  }
  const bool minute = width == "60";
  const int64_t start = minute ? *index * 60 : *index;
  const int64_t hour = FloorDiv(start, kPackSeconds);
  return PackedSlot{fmt::format("{}:p:{}", group, hour), minute,
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
      continue;
    }
    PackAppend& append = AppendFor(wire.appends, index, slot->pack);
    const bool add = incs[i].delta > 0;
    if (add) Grow(append, PackTtl(incs[i], slot->offset));
    // A second followed by its own minute with the same delta (a hit, a take-back): one record.
    std::optional<PackedSlot> next;
    if (!slot->minute && i + 1 < incs.size() && incs[i + 1].delta == incs[i].delta) {
      next = PackedSlotOf(batch.group, incs[i + 1].key);
    }
    if (next && next->minute && next->pack == slot->pack &&
        next->offset == slot->offset / 60 * 60) {
      if (add) Grow(append, PackTtl(incs[i + 1], next->offset));
      PutRecords(append.records, add ? kAddBoth : kSubBoth, slot->offset, Magnitude(incs[i].delta));
      ++i;
      continue;
    }
    const uint16_t kind =
        slot->minute ? (add ? kAddMinute : kSubMinute) : (add ? kAddSecond : kSubSecond);
    if (incs[i].delta != 0) {
      PutRecords(append.records, kind, slot->offset, Magnitude(incs[i].delta));
    }
  }
  std::erase_if(wire.appends, [](const PackAppend& a) { return a.records.empty(); });
  PlanReads(batch, options, wire);
  return wire;
}

std::vector<PackAppend> PlanPackedDelete(const std::string& group,
                                         std::span<const std::string> keys,
                                         std::vector<std::string>& deletes) {
  std::vector<PackAppend> appends;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::vector<bool>> seen;  // per append: the slots deleted (seconds, then minutes)
  for (const std::string& key : keys) {
    std::optional<PackedSlot> slot = PackedSlotOf(group, key);
    if (!slot) {
      deletes.push_back(key);
      continue;
    }
    PackAppend& append = AppendFor(appends, index, slot->pack);
    if (seen.size() < appends.size()) seen.emplace_back(kPackSeconds + kMinutesPerPack, false);
    const size_t at = slot->minute ? size_t(kPackSeconds) + slot->offset / 60 : slot->offset;
    std::vector<bool>& slots = seen[index[slot->pack]];
    if (slots[at]) continue;
    slots[at] = true;
    PutRecords(append.records, slot->minute ? kZeroMinute : kZeroSecond, slot->offset, 0);
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

std::string PackHeader(Instant now, Seconds ttl) {
  std::string header;
  const int64_t expiry = ToUnix(now) + ttl.count();
  PutU32(header, static_cast<uint32_t>(
                     std::clamp<int64_t>(expiry, 0, std::numeric_limits<uint32_t>::max())));
  return header;
}

Result<PackFold> PackFold::Parse(std::string_view key, std::string_view value) {
  const auto bad = [&](std::string_view why) {
    return Error(ErrorCode::kInternal,
                 fmt::format("the value under \"{}\" is not a pack of hourglass's packed layout "
                             "({}; another client wrote it?); reset the feature to delete it",
                             key, why));
  };
  if (value.size() < kPackHeaderBytes) return bad("shorter than its header");
  PackFold fold;
  fold.expiry_ = GetU32(value);
  fold.seconds_.assign(kPackSeconds, 0);
  fold.minutes_.assign(kMinutesPerPack, 0);
  size_t at = kPackHeaderBytes;
  while (at < value.size()) {
    if (value.size() - at < 2) return bad("a record cut short");
    const uint16_t head = static_cast<uint16_t>(static_cast<unsigned char>(value[at]) |
                                                static_cast<unsigned char>(value[at + 1]) << 8);
    at += 2;
    const uint16_t offset = head & 0x0fff;
    const uint16_t kind = head >> 12;
    if (offset >= kPackSeconds) return bad("a record's second is past the hour");
    uint64_t d = 1;
    if (kind & kLong) {
      if ((kind & 7) >= kZeroSecond) return bad("a zero record with a magnitude");
      if (value.size() - at < 4) return bad("a record cut short");
      d = GetU32(value.substr(at));
      at += 4;
    }
    uint64_t& second = fold.seconds_[offset];
    uint64_t& minute = fold.minutes_[offset / 60];
    const auto add = [d](uint64_t& v) {
      v = v > std::numeric_limits<uint64_t>::max() - d ? std::numeric_limits<uint64_t>::max()
                                                       : v + d;
    };
    const auto sub = [d](uint64_t& v) { v = v > d ? v - d : 0; };
    switch (kind & 7) {
      case kAddBoth:
        add(second), add(minute);
        break;
      case kSubBoth:
        sub(second), sub(minute);
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
      case kZeroSecond:
        second = 0;
        break;
      case kZeroMinute:
        minute = 0;
        break;
    }
    ++fold.records_;
  }
  return fold;
}

uint64_t PackFold::Value(const PackedSlot& slot) const {
  return slot.minute ? minutes_[slot.offset / 60] : seconds_[slot.offset];
}

std::string PackFold::Compacted() const {
  std::string out;
  PutU32(out, expiry_);
  for (uint16_t s = 0; s < kPackSeconds; ++s) {
    if (seconds_[s] > 0) PutRecords(out, kAddBoth, s, seconds_[s]);
  }
  // Fold order: every minute first gets the sum of its seconds (all additions), then its
  // correction, so no floor is met on the way to its value.
  for (uint16_t m = 0; m < kMinutesPerPack; ++m) {
    uint64_t sum = 0;
    for (uint16_t s = m * 60; s < m * 60 + 60; ++s) sum += seconds_[s];
    const uint16_t offset = static_cast<uint16_t>(m * 60);
    if (minutes_[m] > sum) PutRecords(out, kAddMinute, offset, minutes_[m] - sum);
    if (minutes_[m] < sum) PutRecords(out, kSubMinute, offset, sum - minutes_[m]);
  }
  return out;
}

}  // namespace hourglass::memcached
