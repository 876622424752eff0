#include "hourglass/space_saving.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace hourglass {

SpaceSaving::SpaceSaving(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("SpaceSaving needs at least one counter");
  heap_.reserve(capacity_);
  where_.reserve(capacity_);
}

void SpaceSaving::Add(std::string_view key, uint64_t weight, LastDecision last) {
  total_ += weight;
  if (auto it = where_.find(std::string(key)); it != where_.end()) {
    Entry& e = heap_[it->second];
    e.count += weight;
    e.last = last;
    SiftDown(it->second);
    return;
  }
  if (heap_.size() < capacity_) {
    // Appended at the bottom, then sifted up: its count may be below its parents'.
    heap_.push_back({std::string(key), weight, 0, last});
    where_.emplace(key, heap_.size() - 1);
    for (size_t i = heap_.size() - 1; i > 0 && heap_[(i - 1) / 2].count > heap_[i].count;) {
      Swap(i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
    return;
  }
  // The least-counted key gives its counter up; the new key inherits its count as error.
  Entry& least = heap_.front();
  where_.erase(least.key);
  least.key.assign(key);
  least.error = least.count;
  least.count += weight;
  least.last = last;
  where_.emplace(key, 0);
  SiftDown(0);
}

SpaceSaving SpaceSaving::Restored(size_t capacity, std::vector<Entry> entries, uint64_t total) {
  SpaceSaving s(capacity);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.count > b.count; });
  uint64_t counted = 0;
  for (Entry& e : entries) {
    if (s.heap_.size() == capacity || s.where_.contains(e.key)) continue;
    e.error = std::min(e.error, e.count);
    counted += e.count - e.error;
    s.where_.emplace(e.key, s.heap_.size());
    s.heap_.push_back(std::move(e));
  }
  // A min-heap by count: sifting down from the last parent to the root makes one.
  for (size_t i = s.heap_.size() / 2; i-- > 0;) s.SiftDown(i);
  s.total_ = std::max(total, counted);
  return s;
}

std::vector<SpaceSaving::Entry> SpaceSaving::Entries() const {
  std::vector<Entry> entries = heap_;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(b.count, a.error, a.key) < std::tie(a.count, b.error, b.key);
  });
  return entries;
}

const SpaceSaving::Entry* SpaceSaving::Find(std::string_view key) const {
  const auto it = where_.find(std::string(key));
  return it == where_.end() ? nullptr : &heap_[it->second];
}

uint64_t SpaceSaving::min_count() const {
  return heap_.size() < capacity_ ? 0 : heap_.front().count;
}

void SpaceSaving::Clear() {
  heap_.clear();
  where_.clear();
  total_ = 0;
}

void SpaceSaving::SiftDown(size_t i) {
  for (;;) {
    size_t least = i;
    for (size_t child : {2 * i + 1, 2 * i + 2}) {
      if (child < heap_.size() && heap_[child].count < heap_[least].count) least = child;
    }
    if (least == i) return;
    Swap(i, least);
    i = least;
  }
}

void SpaceSaving::Swap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  where_[heap_[a].key] = a;
  where_[heap_[b].key] = b;
}

}  // namespace hourglass
