#include "hourglass/local_ledger.h"

#include <algorithm>

namespace hourglass {
namespace {

uint64_t Positive(int64_t hits) { return hits > 0 ? static_cast<uint64_t>(hits) : 0; }

// Adds `hits` at second `t` to `pieces` (one per second, in order).
void AddAt(std::vector<CountedSpan>& pieces, int64_t t, uint64_t hits) {
  auto it = std::lower_bound(pieces.begin(), pieces.end(), t,
                             [](const CountedSpan& p, int64_t s) { return p.span.first < s; });
  if (it != pieces.end() && it->span.first == t) {
    it->hits += hits;
  } else {
    pieces.insert(it, CountedSpan{Span{t, t}, hits});
  }
}

}  // namespace

LocalLedger::LocalLedger(LocalLedgerOptions options)
    : options_(options), services_(options.services) {}

StoreFallback::Verdict LocalLedger::Decide(const std::string& group, std::span<const Span> spans,
                                           std::span<const uint64_t> maxes, const Ask& ask) {
  std::lock_guard lock(mu_);
  Feature& feature = features_[group];
  Prune(feature, ask.t);
  Verdict verdict;
  verdict.allowed = Count(feature, spans, maxes, ask.hits, verdict.pieces);
  if (ask.record && (verdict.allowed || ask.attempts)) Hold(feature, spans, ask, verdict);
  ++stats_.decided;
  stats_.admitted += verdict.allowed ? 1 : 0;
  stats_.full += verdict.full ? 1 : 0;
  Update(group, feature);
  return verdict;
}

bool LocalLedger::Count(const Feature& feature, std::span<const Span> spans,
                        std::span<const uint64_t> maxes, uint64_t hits,
                        std::vector<std::vector<CountedSpan>>& pieces) {
  pieces.resize(spans.size());
  bool fits = true;
  for (size_t i = 0; i < spans.size(); ++i) {
    uint64_t count = 0;
    const auto end = feature.seconds.upper_bound(spans[i].last);
    for (auto it = feature.seconds.lower_bound(spans[i].first); it != end; ++it) {
      const uint64_t here = Positive(it->second.counted());
      if (here == 0) continue;
      pieces[i].push_back(CountedSpan{Span{it->first, it->first}, here});
      count += here;
    }
    fits = fits && count + hits <= maxes[i];
  }
  return fits;
}

void LocalLedger::Hold(Feature& feature, std::span<const Span> spans, const Ask& ask,
                       Verdict& verdict) {
  const bool new_second = !feature.seconds.contains(ask.t);
  if (new_second && stats_.held_seconds >= options_.max_seconds) {
    verdict.allowed = false;
    verdict.full = true;
    return;
  }
  stats_.held_seconds += new_second ? 1 : 0;
  Entry& entry = feature.seconds[ask.t];
  if (ask.sent) {  // perhaps in the store already: counted here, not written back
    entry.written += ask.hits;
    stats_.uncertain += ask.hits;
  } else {
    AddPending(feature, entry, static_cast<int64_t>(ask.hits));
  }
  verdict.recorded = true;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].Contains(ask.t)) AddAt(verdict.pieces[i], ask.t, ask.hits);
  }
}

void LocalLedger::TakeBack(const std::string& group, int64_t t, uint64_t hits) {
  std::lock_guard lock(mu_);
  auto feature = features_.find(group);
  if (feature == features_.end()) return;
  auto entry = feature->second.seconds.find(t);
  if (entry == feature->second.seconds.end()) return;
  AddPending(feature->second, entry->second, -static_cast<int64_t>(hits));
  DropIfEmpty(feature->second, entry);
  Update(group, feature->second);
}

std::vector<std::string> LocalLedger::PendingGroups(size_t max) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> groups;
  for (auto it = pending_.begin(); it != pending_.end() && groups.size() < max; ++it) {
    groups.push_back(*it);
  }
  return groups;
}

std::vector<StoreFallback::SecondHits> LocalLedger::Claim(const std::string& group) {
  std::lock_guard lock(mu_);
  std::vector<SecondHits> claimed;
  auto feature = features_.find(group);
  if (feature == features_.end()) return claimed;
  for (auto& [second, entry] : feature->second.seconds) {
    if (entry.pending == 0) continue;
    claimed.push_back(SecondHits{second, entry.pending});
    entry.claimed += entry.pending;
    AddPending(feature->second, entry, -entry.pending);
  }
  Update(group, feature->second);
  return claimed;
}

void LocalLedger::Release(const std::string& group, std::span<const SecondHits> claimed,
                          Landed landed) {
  std::lock_guard lock(mu_);
  auto feature = features_.find(group);
  if (feature == features_.end()) return;
  for (const SecondHits& s : claimed) {
    auto entry = feature->second.seconds.find(s.second);
    if (entry == feature->second.seconds.end()) continue;
    Entry& e = entry->second;
    e.claimed -= s.hits;
    if (landed == Landed::kNo) {
      AddPending(feature->second, e, s.hits);
      continue;
    }
    const int64_t held = static_cast<int64_t>(e.written) + s.hits;
    e.written = Positive(held);
    (landed == Landed::kYes ? stats_.written_back : stats_.uncertain) += Positive(s.hits);
    DropIfEmpty(feature->second, entry);
  }
  Update(group, feature->second);
}

size_t LocalLedger::Sweep(Instant now) {
  std::lock_guard lock(mu_);
  const uint64_t before = stats_.held_seconds;
  for (auto it = features_.begin(); it != features_.end();) {
    Prune(it->second, ToUnix(now));
    if (!it->second.seconds.empty()) {
      ++it;
      continue;
    }
    pending_.erase(it->first);
    it = features_.erase(it);
  }
  pending_features_.store(pending_.size());
  return before - stats_.held_seconds;
}

LocalLedger::Stats LocalLedger::stats() const {
  std::lock_guard lock(mu_);
  Stats stats = stats_;
  stats.pending_features = pending_.size();
  stats.services = services_.load();
  for (const auto& [group, feature] : features_) {
    for (const auto& [second, entry] : feature.seconds) {
      stats.pending_hits += Positive(entry.pending + entry.claimed);
    }
  }
  return stats;
}

void LocalLedger::Prune(Feature& feature, int64_t t) {
  const int64_t oldest = t - options_.keep.count();
  for (auto it = feature.seconds.begin(); it != feature.seconds.end() && it->first < oldest;) {
    if (it->second.claimed != 0) {  // being written back: Release decides
      ++it;
      continue;
    }
    stats_.expired += Positive(it->second.pending);
    AddPending(feature, it->second, -it->second.pending);
    it = feature.seconds.erase(it);
    --stats_.held_seconds;
  }
}

void LocalLedger::DropIfEmpty(Feature& feature, std::map<int64_t, Entry>::iterator entry) {
  const Entry& e = entry->second;
  if (e.pending != 0 || e.claimed != 0 || e.written != 0) return;
  feature.seconds.erase(entry);
  --stats_.held_seconds;
}

void LocalLedger::AddPending(Feature& feature, Entry& entry, int64_t delta) {
  const bool was = entry.pending != 0;
  entry.pending += delta;
  const bool is = entry.pending != 0;
  if (was != is) {
    if (is) {
      ++feature.pending_entries;
    } else {
      --feature.pending_entries;
    }
  }
}

void LocalLedger::Update(const std::string& group, Feature& feature) {
  // Claimed hits are not pending for PendingGroups: no one else may claim them.
  if (feature.pending_entries > 0) {
    pending_.insert(group);
  } else {
    pending_.erase(group);
  }
  if (feature.seconds.empty()) features_.erase(group);
  pending_features_.store(pending_.size());
}

}  // namespace hourglass
