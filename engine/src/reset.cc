#include "reset.h"

namespace hourglass::internal {
namespace {

// Every top-level bucket that can still be alive around `t`.
std::vector<Bucket> TopCandidates(const EngineCore& core, int64_t t) {
  const Ladder& ladder = core.keys.ladder();
  const size_t top = ladder.levels() - 1;
  const int64_t w = ladder.width(top).count();
  const int64_t first = FloorDiv(t - core.keys.Ttl(top).count(), w);
  const int64_t last = FloorDiv(t + core.settle_margin().count(), w);
  std::vector<Bucket> candidates;
  for (int64_t i = first; i <= last; ++i) candidates.push_back(Bucket{uint32_t(top), i});
  return candidates;
}

// The children one level down of `bucket`.
void AppendChildren(const Ladder& ladder, const Bucket& bucket, std::vector<Bucket>& out) {
  const size_t level = bucket.level;
  const int64_t ratio = ladder.width(level).count() / ladder.width(level - 1).count();
  for (int64_t c = 0; c < ratio; ++c) {
    out.push_back(Bucket{static_cast<uint32_t>(level - 1), bucket.index * ratio + c});
  }
}

// The keys of the buckets that hold hits, found level by level; one read per level.
Result<std::vector<std::string>> FindNonEmpty(const EngineCore& core, const std::string& group,
                                              int64_t t, Cost& cost) {
  std::vector<std::string> found;
  std::vector<Bucket> candidates = TopCandidates(core, t);
  while (!candidates.empty()) {
    Batch batch{group, {}, {}};
    batch.non_counters_read_as_max = true;  // whatever is there is deleted
    for (const Bucket& bucket : candidates)
      batch.reads.push_back(core.keys.BucketKey(group, bucket));
    Result<std::vector<uint64_t>> values = core.store->Apply(batch);
    if (!values.ok()) return values.error();
    cost.keys_read += batch.reads.size();
    cost.round_trips += 1;
    std::vector<Bucket> children;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if ((*values)[i] == 0) continue;
      found.push_back(batch.reads[i]);
      if (candidates[i].level > 0) AppendChildren(core.keys.ladder(), candidates[i], children);
    }
    candidates = std::move(children);
  }
  return found;
}

// The ledgers of every day that can still be alive around `t` (none when the keys keep none).
std::vector<std::string> LedgerKeysAround(const EngineCore& core, const std::string& group,
                                          int64_t t) {
  std::vector<std::string> keys;
  if (!core.keys.keeps_ledger()) return keys;
  const int64_t day = KeySpace::kLedgerSpan.count();
  const int64_t first = FloorDiv(t - core.keys.LedgerTtl().count(), day);
  const int64_t last = FloorDiv(t + core.settle_margin().count(), day);
  for (int64_t d = first; d <= last; ++d) {
    KeySpace::LedgerKeys ledger = KeySpace::Ledger(group, d);
    keys.push_back(std::move(ledger.added));
    keys.push_back(std::move(ledger.events));
  }
  return keys;
}

// The penalty keys of `block_for` that can still be alive around `t` (KeySpace::Strike's TTL).
std::vector<std::string> PenaltyKeysAround(const EngineCore& core, const std::string& group,
                                           int64_t t, Seconds block_for) {
  std::vector<std::string> keys;
  if (block_for <= Seconds{0}) return keys;
  const int64_t margin = core.settle_margin().count();
  const int64_t b = block_for.count();
  for (int64_t at = t - 2 * b - margin; FloorDiv(at, b) <= FloorDiv(t + margin, b); at += b) {
    keys.push_back(std::move(KeySpace::Penalty(group, block_for, at).current));
  }
  return keys;
}

}  // namespace

Result<Cost> ResetGroup(const EngineCore& core, const std::string& group, int64_t t,
                        Seconds block_for, uint64_t& deleted) {
  Cost cost;
  Result<std::vector<std::string>> doomed = FindNonEmpty(core, group, t, cost);
  if (!doomed.ok()) return doomed.error();
  deleted = doomed->size();
  // The ledgers too: they may count hits whose buckets the store lost.
  std::vector<std::string> deletes = std::move(*doomed);
  for (std::string& key : LedgerKeysAround(core, group, t)) deletes.push_back(std::move(key));
  for (std::string& key : PenaltyKeysAround(core, group, t, block_for)) {
    deletes.push_back(std::move(key));
  }
  if (!deletes.empty()) {
    if (Status s = core.store->Delete(group, deletes); !s.ok()) return s.error();
    cost.keys_written += deletes.size();
    cost.round_trips += 1;
  }
  // After the deletes: every process that reads the new generation drops what it cached.
  Batch bump{group, {KeySpace::GenerationBump(group)}, {KeySpace::GenerationKey(group)}};
  Result<std::vector<uint64_t>> bumped = core.store->Apply(bump);
  if (!bumped.ok()) return bumped.error();
  cost.keys_written += 1;
  cost.round_trips += 1;
  if (core.buckets) core.buckets->Invalidate(group);
  return cost;
}

}  // namespace hourglass::internal
