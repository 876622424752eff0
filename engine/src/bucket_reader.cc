#include "bucket_reader.h"

namespace hourglass::internal {
namespace {

bool FromCache(uint8_t flags) { return (flags & BucketCache::kCached) != 0; }

}  // namespace

std::vector<uint8_t> BucketReader::LookUp(const std::string& group, std::span<const Bucket> buckets,
                                          Instant now, BucketRead& read) const {
  std::vector<uint8_t> flags(buckets.size(), 0);
  if (cache_ == nullptr) return flags;
  const int64_t settled = ToUnix(now) - settle_margin_.count();
  for (size_t i = 0; i < buckets.size(); ++i) {
    const int64_t w = keys_.ladder().width(buckets[i].level).count();
    if ((buckets[i].index + 1) * w - 1 < settled) flags[i] = BucketCache::kImmutable;
  }
  cache_->Lookup(group, buckets, flags, read.values);
  return flags;
}

Result<BucketRead> BucketReader::Read(const std::string& group, std::span<const Bucket> buckets,
                                      std::vector<Increment> increments, Instant now,
                                      std::optional<KeySpace::LedgerKeys> ledger) const {
  PendingRead pending = Prepare(group, buckets, std::move(increments), now, std::move(ledger));
  if (!pending.needs_store) return std::move(pending.read);
  while (true) {
    Result<std::vector<uint64_t>> answer = store_.Apply(pending.batch);
    if (auto done = Advance(group, buckets, pending, std::move(answer))) return std::move(*done);
  }
}

PendingRead BucketReader::Prepare(const std::string& group, std::span<const Bucket> buckets,
                                  std::vector<Increment> increments, Instant now,
                                  std::optional<KeySpace::LedgerKeys> ledger,
                                  std::vector<std::string> extras,
                                  std::span<const WindowGuard> guards) const {
  PendingRead p;
  p.read.values.assign(buckets.size(), 0);
  p.flags = LookUp(group, buckets, now, p.read);
  p.batch = Batch{group, std::move(increments), {}};
  p.read.cost.keys_written = p.batch.increments.size();
  p.batch.reads.reserve(buckets.size() + 3);
  // Live buckets alone are neither taken from the cache nor kept in it: no generation to check.
  p.reads_generation =
      cache_ != nullptr && std::any_of(p.flags.begin(), p.flags.end(), [](uint8_t f) { return f; });
  if (p.reads_generation) p.batch.reads.push_back(KeySpace::GenerationKey(group));  // first
  p.reads_ledger = ledger.has_value();
  if (p.reads_ledger) p.batch.reads.push_back(std::move(ledger->added));
  std::vector<size_t> read_of(buckets.size(), 0);  // a bucket's position in batch.reads
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (FromCache(p.flags[i])) continue;
    read_of[i] = p.batch.reads.size();
    p.batch.reads.push_back(keys_.BucketKey(group, buckets[i]));
  }
  if (p.reads_ledger) p.batch.reads.push_back(std::move(ledger->events));
  for (const WindowGuard& window : guards) {
    Guard guard{0, window.max, {}};
    for (const WindowGuard::Term& term : window.terms) {
      if (FromCache(p.flags[term.bucket])) {
        const int64_t cached =
            static_cast<int64_t>(std::min<uint64_t>(p.read.values[term.bucket], uint64_t{1} << 62));
        guard.base += term.sign * cached;
      } else {
        guard.terms.push_back(GuardTerm{read_of[term.bucket], term.sign});
      }
    }
    p.batch.guards.push_back(std::move(guard));
  }
  p.guarded = !p.batch.guards.empty();
  p.extras = extras.size();
  for (std::string& key : extras) p.batch.reads.push_back(std::move(key));
  p.keys_read = p.batch.reads.size();
  p.needs_store = !p.batch.reads.empty() || !p.batch.increments.empty();
  return p;
}

std::optional<Result<BucketRead>> BucketReader::Advance(
    const std::string& group, std::span<const Bucket> buckets, PendingRead& pending,
    Result<std::vector<uint64_t>> answer) const {
  BucketRead& read = pending.read;
  if (!pending.needs_store) return std::move(read);
  if (pending.rereading) return CompleteReread(group, buckets, pending, std::move(answer));
  if (!answer.ok()) return answer.error();
  const std::vector<uint64_t>& values = *answer;
  if (pending.guarded) {
    read.applied = !values.empty() && values.back() == 1;
    if (!*read.applied) read.cost.keys_written = 0;  // held back: nothing was written
  }
  read.cost.keys_read += pending.keys_read;
  read.cost.round_trips += pending.keys_read == 0 ? 0 : 1;
  size_t k = pending.reads_generation ? 1 : 0;
  const uint64_t added = pending.reads_ledger ? values[k++] : 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!FromCache(pending.flags[i])) read.values[i] = values[k++];
  }
  // 2 * added - events; events below added were lost (evicted): no ledger then.
  if (pending.reads_ledger && values[k] >= added) {
    const uint64_t events = values[k];
    read.ledger = added > events - added ? added - (events - added) : 0;
  }
  k += pending.reads_ledger ? 1 : 0;
  read.extras.assign(values.begin() + static_cast<std::ptrdiff_t>(k),
                     values.begin() + static_cast<std::ptrdiff_t>(k + pending.extras));
  if (!pending.reads_generation) return std::move(read);

  // The generation was read before any bucket: values cached under it are current.
  const uint64_t gen = values[0];
  std::vector<uint8_t>& flags = pending.flags;
  const size_t cached = static_cast<size_t>(std::count_if(flags.begin(), flags.end(), FromCache));
  if (!cache_->Sync(group, gen) && cached > 0) {
    pending.generation = gen;
    PrepareReread(group, buckets, pending);
    return std::nullopt;
  }
  read.cost.cache_hits += cached;
  cache_->Store(group, gen, buckets, flags, read.values);
  return std::move(read);
}

void BucketReader::PrepareReread(const std::string& group, std::span<const Bucket> buckets,
                                 PendingRead& pending) const {
  pending.batch = Batch{group, {}, {}};
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (FromCache(pending.flags[i])) {
      pending.batch.reads.push_back(keys_.BucketKey(group, buckets[i]));
    }
  }
  pending.keys_read = pending.batch.reads.size();
  pending.rereading = true;
}

Result<BucketRead> BucketReader::CompleteReread(const std::string& group,
                                                std::span<const Bucket> buckets,
                                                PendingRead& pending,
                                                Result<std::vector<uint64_t>> answer) const {
  if (!answer.ok()) return answer.error();
  BucketRead& read = pending.read;
  size_t k = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!FromCache(pending.flags[i])) continue;
    read.values[i] = (*answer)[k++];
    pending.flags[i] &= static_cast<uint8_t>(~BucketCache::kCached);
  }
  read.cost.keys_read += pending.keys_read;
  read.cost.round_trips += 1;
  cache_->Store(group, pending.generation, buckets, pending.flags, read.values);
  return std::move(read);
}

}  // namespace hourglass::internal
