// The engine's process-local caches (internal):
// - BucketCache: values of buckets that can no longer change (their span ended more than the
//   settle margin ago), per event+feature, tagged with the feature's generation so a reset
//   anywhere invalidates them here;
// - BlockedCache: clients denied until a time before which they certainly stay denied.
// Both are bounded, sharded by group key, and safe to use from many threads.
#pragma once

#include <array>
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "hourglass/decision.h"
#include "hourglass/ladder.h"
#include "hourglass/retry_after.h"

namespace hourglass::internal {

struct BucketHash {
  size_t operator()(const Bucket& b) const {
    return std::hash<int64_t>()(b.index * 16 + static_cast<int64_t>(b.level));
  }
};

class BucketCache {
 public:
  // Buckets are of `ladder`'s levels: a full feature keeps the half that ends last.
  BucketCache(size_t max_features, size_t max_buckets_per_feature, Ladder ladder)
      : max_features_per_shard_(std::max<size_t>(1, max_features / kShards)),
        max_buckets_(max_buckets_per_feature),
        ladder_(std::move(ladder)) {}

  // Flags of one bucket of a Lookup or Store.
  static constexpr uint8_t kImmutable = 1;  // in: may be cached
  static constexpr uint8_t kCached = 2;     // out: values[i] came from the cache

  // One lock for a whole read: for each bucket flagged kImmutable and cached for `group`, its
  // value in values[i] and kCached added to flags[i]. The caller checks the generation (Sync).
  void Lookup(const std::string& group, std::span<const Bucket> buckets, std::span<uint8_t> flags,
              std::span<uint64_t> values);
  // Records that `group` is at generation `gen`; drops what was cached under another one.
  // Returns false when something was dropped.
  bool Sync(const std::string& group, uint64_t gen);
  // Caches values[i] of every bucket flagged kImmutable and not kCached, read under `gen`.
  void Store(const std::string& group, uint64_t gen, std::span<const Bucket> buckets,
             std::span<const uint8_t> flags, std::span<const uint64_t> values);
  void Invalidate(const std::string& group);

 private:
  static constexpr size_t kShards = 16;
  struct Entry {
    uint64_t gen = 0;
    std::unordered_map<Bucket, uint64_t, BucketHash> values;
    std::list<std::string>::iterator lru;
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, Entry> entries;
    std::list<std::string> lru;  // most recently used first
  };
  Shard& ShardFor(const std::string& group) {
    return shards_[std::hash<std::string>()(group) % kShards];
  }
  Entry& Touch(Shard& shard, const std::string& group);  // creates; holds shard.mu

  size_t max_features_per_shard_;
  size_t max_buckets_;
  Ladder ladder_;
  std::array<Shard, kShards> shards_;
};

class BlockedCache {
 public:
  BlockedCache(size_t max_entries, Seconds max_age)
      : max_per_shard_(std::max<size_t>(1, max_entries / kShards)), max_age_(max_age) {}

  struct Entry {
    Instant decided_at;
    Instant until;      // denied certainly before this (EarliestRetry)
    uint64_t hits = 0;  // the weight of the denied check
    Decision decision;
    // Per limit, the hits that stay recorded (as RetryAfter reads them). Attempts counted while
    // blocked are added here, so the client-facing retry time follows them.
    std::vector<std::vector<CountedSpan>> pieces;
    // Per limit, RetryAfter for a check worth `hits` on `pieces`, worked out once; empty: none.
    std::vector<RetryPlan> retry_plans;
  };
  // The entry for `key` if a check worth `hits` at `now` is certainly denied; shared, never
  // changed (Put replaces it), so that a local denial copies nothing.
  std::shared_ptr<const Entry> Get(const std::string& key, Instant now, uint64_t hits);
  // What Forget has done so far where `key` lives: read before a decision reads the store, and
  // given back to Put, it keeps a decision that started before a reset from being cached after it.
  uint64_t Epoch(const std::string& key);
  // Caches `entry`, unless a Forget came after `epoch` was read (the decision may predate it).
  void Put(const std::string& key, Entry entry, uint64_t epoch);
  // Whether `key` was denied at its last check in this process, however long ago (until the entry
  // is evicted or forgotten): such a client is checked read-first.
  bool Known(const std::string& key);
  // Drops `key`'s entry: its client fits again.
  void Erase(const std::string& key);
  // Drops every entry of `group` (keys are the group, 0x1f, then the policy): after a reset.
  void Forget(const std::string& group);

 private:
  static constexpr size_t kShards = 16;
  // The shard of a key: by its group, so that Forget looks in one shard.
  size_t ShardOf(std::string_view key) const;
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string,
                       std::pair<std::shared_ptr<const Entry>, std::list<std::string>::iterator>>
        entries;
    std::list<std::string> lru;
    // Forget calls on this shard: written under mu, read without it (Epoch takes no lock, so
    // that a decision's threads share no written cache line to learn it).
    std::atomic<uint64_t> forgets{0};
  };
  size_t max_per_shard_;
  Seconds max_age_;
  std::array<Shard, kShards> shards_;
};

}  // namespace hourglass::internal
