#include "hourglass/space_saving.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace hourglass {

SpaceSaving::SpaceSaving(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("SpaceSaving needs at least one counter");
  slots_.reserve(capacity_);
  heap_.reserve(capacity_);
  position_.reserve(capacity_);
  where_.reserve(capacity_);
}

void SpaceSaving::Add(std::string_view key, uint64_t weight, LastDecision last) {
  total_ += weight;
  if (auto it = where_.find(key); it != where_.end()) {
    Entry& e = slots_[it->second];
    e.count += weight;
    e.last = last;
    SiftDown(position_[it->second]);
    return;
  }
  if (slots_.size() < capacity_) {
    slots_.push_back({std::string(key), weight, 0, last});
    const auto slot = static_cast<uint32_t>(slots_.size() - 1);
    where_.emplace(key, slot);
    return Push(slot);
  }
  // The least-counted key gives its counter up; the new key inherits its count as error. Its map
  // node is reused: no allocation once keys fit the strings already there.
  const uint32_t slot = heap_.front();
  Entry& least = slots_[slot];
  auto node = where_.extract(where_.find(least.key));
  node.key().assign(key);
  where_.insert(std::move(node));
  least.key.assign(key);
  least.error = least.count;
  least.count += weight;
  least.last = last;
  SiftDown(0);
}

SpaceSaving SpaceSaving::Restored(size_t capacity, std::vector<Entry> entries, uint64_t total) {
  SpaceSaving s(capacity);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.count > b.count; });
  uint64_t counted = 0;
  for (Entry& e : entries) {
    if (s.slots_.size() == capacity || s.where_.contains(e.key)) continue;
    e.error = std::min(e.error, e.count);
    counted += e.count - e.error;
    const auto slot = static_cast<uint32_t>(s.slots_.size());
    s.where_.emplace(e.key, slot);
    s.slots_.push_back(std::move(e));
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
  const auto it = where_.find(key);
  return it == where_.end() ? nullptr : &slots_[it->second];
}

uint64_t SpaceSaving::min_count() const { return slots_.size() < capacity_ ? 0 : CountAt(0); }

void SpaceSaving::Clear() {
  slots_.clear();
  heap_.clear();
  position_.clear();
  where_.clear();
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
