#include "hourglass/space_saving.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <tuple>

namespace hourglass {

SpaceSaving::SpaceSaving(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("SpaceSaving needs at least one counter");
  slots_.reserve(capacity_);
  heap_.reserve(capacity_);
  position_.reserve(capacity_);
  hashes_.reserve(capacity_);
  index_.assign(std::bit_ceil(2 * capacity_), kNone);
}

void SpaceSaving::Add(std::string_view key, size_t hash, uint64_t weight, LastDecision last) {
  total_ += weight;
  if (const uint32_t slot = SlotOf(key, hash); slot != kNone) {
    Entry& e = slots_[slot];
    e.count += weight;
    e.last = last;
    SiftDown(position_[slot]);
    return;
  }
  if (slots_.size() < capacity_) {
    slots_.push_back({std::string(key), weight, 0, last});
    hashes_.push_back(hash);
    const auto slot = static_cast<uint32_t>(slots_.size() - 1);
    Index(slot);
    return Push(slot);
  }
  // The least-counted key gives its counter up; the new key inherits its count as error.
  const uint32_t slot = heap_.front();
  Unindex(slot);
  Entry& least = slots_[slot];
  least.key.assign(key);
  hashes_[slot] = hash;
  Index(slot);
  least.error = least.count;
  least.count += weight;
  least.last = last;
  SiftDown(0);
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
    const auto slot = static_cast<uint32_t>(s.slots_.size());
    s.slots_.push_back(std::move(e));
    s.hashes_.push_back(hash);
    s.Index(slot);
    s.heap_.push_back(slot);
    s.position_.push_back(slot);
  }
  // A min-heap by count: sifting down from the last parent to the root makes one.
  for (size_t i = s.heap_.size() / 2; i-- > 0;) s.SiftDown(i);
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

uint64_t SpaceSaving::min_count() const { return slots_.size() < capacity_ ? 0 : CountAt(0); }

void SpaceSaving::Clear() {
  slots_.clear();
  heap_.clear();
  position_.clear();
  hashes_.clear();
  std::fill(index_.begin(), index_.end(), kNone);
  total_ = 0;
}

void SpaceSaving::Push(uint32_t slot) {
  heap_.push_back(slot);
  position_.push_back(static_cast<uint32_t>(heap_.size() - 1));
  SiftUp(heap_.size() - 1);
}

void SpaceSaving::SiftUp(size_t position) {
  while (position > 0 && CountAt((position - 1) / 2) > CountAt(position)) {
    Swap(position, (position - 1) / 2);
    position = (position - 1) / 2;
  }
}

void SpaceSaving::SiftDown(size_t position) {
  for (;;) {
    size_t least = position;
    for (size_t child : {2 * position + 1, 2 * position + 2}) {
      if (child < heap_.size() && CountAt(child) < CountAt(least)) least = child;
    }
    if (least == position) return;
    Swap(position, least);
    position = least;
  }
}

void SpaceSaving::Swap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  position_[heap_[a]] = static_cast<uint32_t>(a);
  position_[heap_[b]] = static_cast<uint32_t>(b);
}

}  // namespace hourglass
