#include "hot_path_cache.h"

#include <algorithm>
#include <vector>

namespace hourglass::internal {

BucketCache::Entry& BucketCache::Touch(Shard& shard, const std::string& group) {
  auto it = shard.entries.find(group);
  if (it != shard.entries.end()) {
    shard.lru.splice(shard.lru.begin(), shard.lru, it->second.lru);
    return it->second;
  }
  if (shard.entries.size() >= max_features_per_shard_) {
    shard.entries.erase(shard.lru.back());
    shard.lru.pop_back();
  }
  shard.lru.push_front(group);
  Entry& entry = shard.entries[group];
  entry.lru = shard.lru.begin();
  return entry;
}

void BucketCache::Lookup(const std::string& group, std::span<const Bucket> buckets,
                         std::span<uint8_t> flags, std::span<uint64_t> values) {
  Shard& shard = ShardFor(group);
  std::lock_guard lock(shard.mu);
  auto it = shard.entries.find(group);
  if (it == shard.entries.end()) return;
  const auto& cached = it->second.values;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!(flags[i] & kImmutable)) continue;
    auto v = cached.find(buckets[i]);
    if (v == cached.end()) continue;
    values[i] = v->second;
    flags[i] |= kCached;
  }
}

bool BucketCache::Sync(const std::string& group, uint64_t gen) {
  Shard& shard = ShardFor(group);
  std::lock_guard lock(shard.mu);
  auto it = shard.entries.find(group);
  if (it == shard.entries.end()) {
    Touch(shard, group).gen = gen;
    return true;
  }
  if (it->second.gen == gen) return true;
  it->second.gen = gen;
  it->second.values.clear();
  return false;
}

void BucketCache::Store(const std::string& group, uint64_t gen, std::span<const Bucket> buckets,
                        std::span<const uint8_t> flags, std::span<const uint64_t> values) {
  Shard& shard = ShardFor(group);
  std::lock_guard lock(shard.mu);
  Entry* entry = nullptr;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (flags[i] != kImmutable) continue;  // not cacheable, or already cached
    if (entry == nullptr) {
      entry = &Touch(shard, group);
      if (entry->gen != gen) return;  // read under another generation: not ours to keep
    }
    if (entry->values.size() >= max_buckets_) {
      // Keep the half that ends last: old buckets leave every window first.
      std::vector<std::pair<int64_t, Bucket>> ends;
      for (const auto& [b, v] : entry->values) {
        ends.emplace_back((b.index + 1) * ladder_.width(b.level).count(), b);
      }
      std::nth_element(ends.begin(), ends.begin() + static_cast<long>(ends.size() / 2), ends.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t k = 0; k < ends.size() / 2; ++k) entry->values.erase(ends[k].second);
    }
    entry->values[buckets[i]] = values[i];
  }
}

void BucketCache::Invalidate(const std::string& group) {
  Shard& shard = ShardFor(group);
  std::lock_guard lock(shard.mu);
  auto it = shard.entries.find(group);
  if (it == shard.entries.end()) return;
  shard.lru.erase(it->second.lru);
  shard.entries.erase(it);
}

size_t BlockedCache::ShardOf(std::string_view key) const {
  return std::hash<std::string_view>()(key.substr(0, key.find('\x1f'))) % kShards;
}

void BlockedCache::Forget(const std::string& group) {
  Shard& shard = shards_[ShardOf(group)];
  std::lock_guard lock(shard.mu);
  shard.forgets.fetch_add(1, std::memory_order_release);
  for (auto it = shard.entries.begin(); it != shard.entries.end();) {
    const std::string& key = it->first;
    if (key.size() > group.size() && key.starts_with(group) && key[group.size()] == '\x1f') {
      shard.lru.erase(it->second.second);
      it = shard.entries.erase(it);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<const BlockedCache::Entry> BlockedCache::Get(const std::string& key, Instant now,
                                                             uint64_t hits) {
  Shard& shard = shards_[ShardOf(key)];
  std::lock_guard lock(shard.mu);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return nullptr;
  const Entry& entry = *it->second.first;
  if (now >= entry.until || now - entry.decided_at >= max_age_ || now < entry.decided_at ||
      hits < entry.hits) {
    return nullptr;
  }
  return it->second.first;
}

bool BlockedCache::Known(const std::string& key) {
  Shard& shard = shards_[ShardOf(key)];
  std::lock_guard lock(shard.mu);
  return shard.entries.contains(key);
}

void BlockedCache::Erase(const std::string& key) {
  Shard& shard = shards_[ShardOf(key)];
  std::lock_guard lock(shard.mu);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return;
  shard.lru.erase(it->second.second);
  shard.entries.erase(it);
}

uint64_t BlockedCache::Epoch(const std::string& key) {
  return shards_[ShardOf(key)].forgets.load(std::memory_order_acquire);
}

void BlockedCache::Put(const std::string& key, Entry entry, uint64_t epoch) {
  Shard& shard = shards_[ShardOf(key)];
  std::lock_guard lock(shard.mu);
  // A reset came after the decision began: the decision may predate it.
  if (shard.forgets.load(std::memory_order_relaxed) != epoch) return;
  auto shared = std::make_shared<const Entry>(std::move(entry));
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) {  // replaced in place, and the most recent
    it->second.first = std::move(shared);
    shard.lru.splice(shard.lru.begin(), shard.lru, it->second.second);
    return;
  }
  if (shard.entries.size() >= max_per_shard_) {
    shard.entries.erase(shard.lru.back());
    shard.lru.pop_back();
  }
  shard.lru.push_front(key);
  shard.entries.emplace(key, std::make_pair(std::move(shared), shard.lru.begin()));
}

}  // namespace hourglass::internal
