// Internal to the engine: one batch of increments and bucket reads, taking the buckets that can
// no longer change from the immutable-bucket cache.
//
// The feature's generation key is read first in the same batch when the read uses or may cache a
// bucket that can no longer change: values cached under another generation (a reset happened
// since) are dropped and read again, so a reset anywhere is seen. A read of live buckets only (a
// policy of seconds) neither uses nor fills the cache, and does not read the generation.
// A read may also ask for a day's ledger (KeySpace::Ledger): `added` is read before any bucket,
// `events` after every one, so that the ledger never counts more than the buckets read hold.
//
// Thread-safety: may be used from many threads (the cache is).
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hot_path_cache.h"
#include "hourglass/decision.h"
#include "hourglass/key_space.h"
#include "hourglass/store.h"

namespace hourglass::internal {

// A window's limit on a conditional batch (Store::conditional_batches): the increments are applied
// only if the window's count, a signed sum of the requested buckets, is at most `max`.
struct WindowGuard {
  struct Term {
    size_t bucket = 0;  // an index into the requested buckets
    int sign = 1;
  };
  std::vector<Term> terms;
  int64_t max = 0;  // below 0: never
};

struct BucketRead {
  std::vector<uint64_t> values;  // per requested bucket
  // With guards: whether the increments were applied (every guard held).
  std::optional<bool> applied;
  // When asked for and whole: today's net hits as the ledger has them, floored at 0.
  std::optional<uint64_t> ledger;
  std::vector<uint64_t> extras;  // per extra key asked for (missing ones read 0)
  Cost cost;
};

// A read prepared but not yet sent: `batch` goes to the store (unless !needs_store), and its
// answer completes the read.
struct PendingRead {
  BucketRead read;                // the cached values so far
  std::vector<uint8_t> flags;     // per bucket: BucketCache flags
  Batch batch;                    // the caller may move it out to send it
  size_t keys_read = 0;           // batch.reads.size()
  bool needs_store = true;        // false: nothing to send, Advance needs no answer
  bool rereading = false;         // batch re-reads the stale cached buckets
  bool reads_generation = false;  // batch reads the generation first (the cache is consulted)
  bool reads_ledger = false;      // batch reads the ledger: first (after the generation) and last
  size_t extras = 0;              // keys read after everything else, raw
  bool guarded = false;           // batch carries guards: its answer ends with "applied"
  uint64_t generation = 0;        // when rereading: the generation the first answer read
};

class BucketReader {
 public:
  // `cache` may be null (no caching).
  BucketReader(Store& store, const KeySpace& keys, BucketCache* cache, Seconds settle_margin)
      : store_(store), keys_(keys), cache_(cache), settle_margin_(settle_margin) {}

  // Applies `increments` and reads `buckets` of `group` in one batch.
  Result<BucketRead> Read(const std::string& group, std::span<const Bucket> buckets,
                          std::vector<Increment> increments, Instant now,
                          std::optional<KeySpace::LedgerKeys> ledger = std::nullopt) const;

  // Read in steps, for callers that send several batches together: Prepare, send pending.batch
  // (if pending.needs_store), then Advance with the same group and buckets and the store's
  // answer. Advance gives the read, or nullopt when buckets served from the cache turned out
  // stale (a reset elsewhere): pending.batch then holds their re-read, to send and Advance again.
  // `ledger`, when given, is read too (BucketRead::ledger), and so are `extras`, keys of the
  // group read as they are, never cached (BucketRead::extras). `guards` (for a store with
  // conditional batches) hold the increments back unless every window fits: a cached bucket
  // enters its guard as a constant, the others as the batch's reads.
  PendingRead Prepare(const std::string& group, std::span<const Bucket> buckets,
                      std::vector<Increment> increments, Instant now,
                      std::optional<KeySpace::LedgerKeys> ledger = std::nullopt,
                      std::vector<std::string> extras = {},
                      std::span<const WindowGuard> guards = {}) const;
  std::optional<Result<BucketRead>> Advance(const std::string& group,
                                            std::span<const Bucket> buckets, PendingRead& pending,
                                            Result<std::vector<uint64_t>> answer) const;

 private:
  // Flags the buckets that ended before the settle margin as immutable and looks them up.
  std::vector<uint8_t> LookUp(const std::string& group, std::span<const Bucket> buckets,
                              Instant now, BucketRead& read) const;
  // Turns `pending` into the re-read of the buckets served from the cache after a reset made
  // them stale.
  void PrepareReread(const std::string& group, std::span<const Bucket> buckets,
                     PendingRead& pending) const;
  // Takes the re-read's answer into the read and caches what may be cached.
  Result<BucketRead> CompleteReread(const std::string& group, std::span<const Bucket> buckets,
                                    PendingRead& pending,
                                    Result<std::vector<uint64_t>> answer) const;

  Store& store_;
  const KeySpace& keys_;
  BucketCache* cache_;
  Seconds settle_margin_;
};

}  // namespace hourglass::internal
