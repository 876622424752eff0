// The Space-Saving summary (Metwally, Agrawal and El Abbadi, 2005): the heaviest keys of a
// weighted stream in `capacity` counters, whatever the number of distinct keys.
//
// Each monitored key has a count that never under-estimates it and an error: its true weight
// lies in [count - error, count]. Once every counter is taken, a new key takes the place of the
// key with the least count (min_count) and inherits it as its error. So:
//   - every key whose true weight exceeds min_count() is monitored;
//   - min_count() <= total() / capacity, and so is every error.
//
//   SpaceSaving top(256);
//   top.Add("198.51.100.7", 1, {.allowed = false, .at = now});
//   for (const SpaceSaving::Entry& e : top.Entries()) ...
//
// Thread-safety: none; the owner locks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"

namespace hourglass {

// The last decision seen for a key.
struct LastDecision {
  bool allowed = true;
  Instant at{};
};

class SpaceSaving {
 public:
  struct Entry {
    std::string key;
    uint64_t count = 0;  // >= the key's true weight
    uint64_t error = 0;  // count - error <= the key's true weight
    LastDecision last;   // the newest Add's (by `at`; of equal ones, the later Add's)
  };

  // `capacity` >= 1 counters.
  explicit SpaceSaving(size_t capacity);
  // A summary as `entries` (Entries() of one) and `total` left it: the state a process kept for
  // the next. Only the heaviest `capacity` entries are taken; entries beyond those, and a total
  // below their weights, are not a summary this one could have made: the total is raised to them.
  static SpaceSaving Restored(size_t capacity, std::vector<Entry> entries, uint64_t total);

  void Add(std::string_view key, uint64_t weight, LastDecision last) {
    Add(key, HashOf(key), weight, last);
  }
  // The same, `hash` being HashOf(key): a caller adding one key to several summaries hashes once.
  void Add(std::string_view key, size_t hash, uint64_t weight, LastDecision last);
  static size_t HashOf(std::string_view key) { return std::hash<std::string_view>{}(key); }
  // The monitored keys, heaviest first (ties: least error first, then by key).
  std::vector<Entry> Entries() const;
  // The entry of `key`, or nullptr when it is not monitored.
  const Entry* Find(std::string_view key) const;
  // A bound on the weight of every key not monitored: 0 while counters are free.
  uint64_t min_count() const;
  uint64_t total() const { return total_; }
  size_t capacity() const { return capacity_; }
  void Clear();

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // The slot of `key` (hashed to `hash`), or kNone.
  uint32_t SlotOf(std::string_view key, size_t hash) const;
  // Indexes slots_[slot], whose key is not indexed yet.
  void Index(uint32_t slot);
  // Removes slots_[slot] from the index.
  void Unindex(uint32_t slot);
  // Takes a free counter for `entry` (its key hashed to `hash`), at the count it holds.
  void Monitor(Entry entry, size_t hash);
  // Moves slots_[slot], of a group or (a new slot) of none, into the group of `count`, made if
  // need be after the groups of smaller counts; sets its count.
  void Place(uint32_t slot, uint64_t count);
  // A new group of `count` between groups `prev` and `next` (kNone: none that side).
  uint32_t NewGroup(uint64_t count, uint32_t prev, uint32_t next);
  // Takes slots_[slot] out of its group, and drops the group if that left it empty.
  void Unlink(uint32_t slot);

  size_t capacity_;
  uint64_t total_ = 0;
  // Entries stay in their slot for as long as they are monitored.
  std::vector<Entry> slots_;
  std::vector<size_t> hashes_;  // slot -> HashOf(its key)
  // The index from keys to slots: open addressing, linear probing, a power of two at least twice
  // the capacity long (so at most half full); each cell a slot, or kNone.
  std::vector<uint32_t> index_;
  // The Stream-Summary of the paper: the slots grouped by count, the groups in a list by
  // ascending count. The least-counted key is any of the first group, and a count raised by w
  // moves its slot to a group at most w counts on: unit weights cost O(1), not a heap's O(log).
  struct Group {
    uint64_t count = 0;
    uint32_t first = kNone;               // a slot of this count; the others follow in `links_`
    uint32_t prev = kNone, next = kNone;  // the groups of the next smaller and larger counts
  };
  struct Link {
    uint32_t group = kNone;               // the slot's group
    uint32_t prev = kNone, next = kNone;  // the other slots of its group
  };
  std::vector<Link> links_;       // slot -> its place among the groups
  std::vector<Group> groups_;     // groups in use and free ones
  std::vector<uint32_t> unused_;  // groups_ free for reuse
  uint32_t least_ = kNone;        // the group of the least count, kNone while empty
};

}  // namespace hourglass
