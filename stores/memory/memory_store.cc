#include "hourglass/memory_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "hourglass/key_codec.h"

namespace hourglass {

Result<std::vector<uint64_t>> MemoryStore::Apply(const Batch& batch) {
  if (Status s = ValidateBatch(batch); !s.ok()) return s.error();
  if (Status s = ValidateGuards(*this, batch); !s.ok()) return s.error();
  const Instant now = clock_.Now();
  std::vector<uint64_t> values;
  values.reserve(batch.reads.size());
  std::lock_guard lock(mu_);
  MaybeSweep(now);
  const bool applied = GuardsHold(batch, now);
  for (const Increment& inc : batch.increments) {
    if (!applied) break;
    auto it = entries_.find(inc.key);
    if (it != entries_.end() && it->second.expires <= now) {
      entries_.erase(it);
      it = entries_.end();
    }
    if (inc.delta > 0) {
      if (it == entries_.end()) it = entries_.emplace(inc.key, Entry{0, now + inc.ttl}).first;
      it->second.value += static_cast<uint64_t>(inc.delta);
    } else if (it != entries_.end()) {
      const auto down = static_cast<uint64_t>(-inc.delta);
      it->second.value = it->second.value > down ? it->second.value - down : 0;
    }
  }
  for (const std::string& key : batch.reads) values.push_back(ValueOf(key, now));
  if (!batch.guards.empty()) values.push_back(applied ? 1 : 0);
  return values;
}

uint64_t MemoryStore::ValueOf(const std::string& key, Instant now) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.expires > now ? it->second.value : 0;
}

bool MemoryStore::GuardsHold(const Batch& batch, Instant now) const {
  if (batch.guards.empty()) return true;
  std::vector<uint64_t> values;
  values.reserve(batch.reads.size());
  for (const std::string& key : batch.reads) values.push_back(ValueOf(key, now));
  return std::all_of(batch.guards.begin(), batch.guards.end(),
                     [&](const Guard& guard) { return GuardHolds(guard, values); });
}

Status MemoryStore::Delete(const std::string& group, std::span<const std::string> keys) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) entries_.erase(key);
  return {};
}

size_t MemoryStore::LiveKeys() const {
  const Instant now = clock_.Now();
  std::lock_guard lock(mu_);
  size_t live = 0;
  for (const auto& [key, entry] : entries_) live += entry.expires > now;
  return live;
}

void MemoryStore::MaybeSweep(Instant now) {
  if (entries_.size() < sweep_at_) return;
  std::erase_if(entries_, [now](const auto& kv) { return kv.second.expires <= now; });
  sweep_at_ = std::max<size_t>(1024, entries_.size() * 2);
}

}  // namespace hourglass
