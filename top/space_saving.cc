#include "hourglass/space_saving.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <tuple>

namespace hourglass {

SpaceSaving::SpaceSaving(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("SpaceSaving needs at least one counter");
  slots_.reserve(capacity_);
  hashes_.reserve(capacity_);
  links_.reserve(capacity_);
  groups_.reserve(capacity_);
  index_.assign(std::bit_ceil(2 * capacity_), kNone);
}

void SpaceSaving::Add(std::string_view key, size_t hash, uint64_t weight, LastDecision last) {
  total_ += weight;
  if (const uint32_t slot = SlotOf(key, hash); slot != kNone) {
    if (last.at >= slots_[slot].last.at) slots_[slot].last = last;
    return Place(slot, slots_[slot].count + weight);
  }
  if (slots_.size() < capacity_) return Monitor({std::string(key), weight, 0, last}, hash);
  // The least-counted key gives its counter up; the new key inherits its count as error.
  const uint32_t slot = groups_[least_].first;
  Unindex(slot);
  Entry& least = slots_[slot];
  least.key.assign(key);
  hashes_[slot] = hash;
  Index(slot);
  least.error = least.count;
  least.last = last;
  Place(slot, least.count + weight);
}

void SpaceSaving::Monitor(Entry entry, size_t hash) {
  const auto slot = static_cast<uint32_t>(slots_.size());
  const uint64_t count = entry.count;
  slots_.push_back(std::move(entry));
  hashes_.push_back(hash);
  links_.emplace_back();
  Index(slot);
  Place(slot, count);
}

void SpaceSaving::Place(uint32_t slot, uint64_t count) {
  const uint32_t from = links_[slot].group;
  slots_[slot].count = count;
  // Alone in its group, with no group in the way: the group takes the new count.
  if (from != kNone && links_[slot].next == kNone && groups_[from].first == slot &&
      (groups_[from].next == kNone || groups_[groups_[from].next].count > count)) {
    groups_[from].count = count;
    return;
  }
  uint32_t before = from;
  uint32_t at = from == kNone ? least_ : groups_[from].next;
  while (at != kNone && groups_[at].count < count) {
    before = at;
    at = groups_[at].next;
  }
  const uint32_t to = at != kNone && groups_[at].count == count ? at : NewGroup(count, before, at);
  if (from != kNone) Unlink(slot);
  Link& link = links_[slot];
  link = {.group = to, .prev = kNone, .next = groups_[to].first};
  if (link.next != kNone) links_[link.next].prev = slot;
  groups_[to].first = slot;
}

uint32_t SpaceSaving::NewGroup(uint64_t count, uint32_t prev, uint32_t next) {
  uint32_t g;
  if (!unused_.empty()) {
    g = unused_.back();
    unused_.pop_back();
  } else {
    g = static_cast<uint32_t>(groups_.size());
    groups_.emplace_back();
  }
  groups_[g] = {.count = count, .first = kNone, .prev = prev, .next = next};
  (prev == kNone ? least_ : groups_[prev].next) = g;
  if (next != kNone) groups_[next].prev = g;
  return g;
}

void SpaceSaving::Unlink(uint32_t slot) {
  const Link link = links_[slot];
  Group& group = groups_[link.group];
  (link.prev == kNone ? group.first : links_[link.prev].next) = link.next;
  if (link.next != kNone) links_[link.next].prev = link.prev;
  if (group.first != kNone) return;
  (group.prev == kNone ? least_ : groups_[group.prev].next) = group.next;
  if (group.next != kNone) groups_[group.next].prev = group.prev;
  unused_.push_back(link.group);
}

uint32_t SpaceSaving::SlotOf(std::string_view key, size_t hash) const {
  const size_t mask = index_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint32_t slot = index_[i];
    if (slot == kNone) return kNone;
    if (hashes_[slot] == hash && slots_[slot].key == key) return slot;
  }
}

void SpaceSaving::Index(uint32_t slot) {
  const size_t mask = index_.size() - 1;
  size_t i = hashes_[slot] & mask;
  while (index_[i] != kNone) i = (i + 1) & mask;
  index_[i] = slot;
}

void SpaceSaving::Unindex(uint32_t slot) {
  const size_t mask = index_.size() - 1;
  size_t hole = hashes_[slot] & mask;
  while (index_[hole] != slot) hole = (hole + 1) & mask;
  // Backward shift: each later cell of the run whose home is not in (hole, cell] moves into the
  // hole, so that every key stays reachable from its home without tombstones.
  for (size_t i = (hole + 1) & mask; index_[i] != kNone; i = (i + 1) & mask) {
    const size_t home = hashes_[index_[i]] & mask;
    const bool stays = hole < i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (stays) continue;
    index_[hole] = index_[i];
    hole = i;
  }
  index_[hole] = kNone;
}

SpaceSaving SpaceSaving::Restored(size_t capacity, std::vector<Entry> entries, uint64_t total) {
  SpaceSaving s(capacity);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.count > b.count; });
  uint64_t counted = 0;
  for (Entry& e : entries) {
    const size_t hash = HashOf(e.key);
    if (s.slots_.size() == capacity || s.SlotOf(e.key, hash) != kNone) continue;
    e.error = std::min(e.error, e.count);
    counted += e.count - e.error;
    s.Monitor(std::move(e), hash);
  }
  s.total_ = std::max(total, counted);
  return s;
}

std::vector<SpaceSaving::Entry> SpaceSaving::Entries() const {
  std::vector<Entry> entries = slots_;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(b.count, a.error, a.key) < std::tie(a.count, b.error, b.key);
  });
  return entries;
}

const SpaceSaving::Entry* SpaceSaving::Find(std::string_view key) const {
  const uint32_t slot = SlotOf(key, HashOf(key));
  return slot == kNone ? nullptr : &slots_[slot];
}

uint64_t SpaceSaving::min_count() const {
  return slots_.size() < capacity_ ? 0 : groups_[least_].count;
}

void SpaceSaving::Clear() {
  slots_.clear();
  hashes_.clear();
  links_.clear();
  groups_.clear();
  unused_.clear();
  least_ = kNone;
  std::fill(index_.begin(), index_.end(), kNone);
  total_ = 0;
}

}  // namespace hourglass
