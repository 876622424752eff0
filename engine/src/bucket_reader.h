// Internal to the engine: one batch of increments and bucket reads, taking the buckets that can
// no longer change from the immutable-bucket cache.
//
// The feature's generation key is read first in the same batch: values cached under another
// generation (a reset happened since) are dropped and read again, so a reset anywhere is seen.
//
// Thread-safety: may be used from many threads (the cache is).
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "hot_path_cache.h"
#include "hourglass/decision.h"
#include "hourglass/key_space.h"
#include "hourglass/store.h"

namespace hourglass::internal {

struct BucketRead {
  std::vector<uint64_t> values;  // per requested bucket
  Cost cost;
};

// A read prepared but not yet sent: `batch` goes to the store (unless !needs_store), and its
// answer completes the read.
struct PendingRead {
  BucketRead read;             // the cached values so far
  std::vector<uint8_t> flags;  // per bucket: BucketCache flags
  Batch batch;                 // the caller may move it out to send it
  size_t keys_read = 0;        // batch.reads.size()
  bool needs_store = true;     // false: nothing to send, Complete needs no answer
};

class BucketReader {
 public:
  // `cache` may be null (no caching).
  BucketReader(Store& store, const KeySpace& keys, BucketCache* cache, Seconds settle_margin)
      : store_(store), keys_(keys), cache_(cache), settle_margin_(settle_margin) {}

  // Applies `increments` and reads `buckets` of `group` in one batch.
  Result<BucketRead> Read(const std::string& group, std::span<const Bucket> buckets,
                          std::vector<Increment> increments, Instant now) const;

  // Read in two steps, for callers that send several batches together: Prepare, send
  // pending.batch (if pending.needs_store), then Complete with the same group and buckets and the
  // store's answer. Complete may read again on its own (after a reset elsewhere).
  PendingRead Prepare(const std::string& group, std::span<const Bucket> buckets,
                      std::vector<Increment> increments, Instant now) const;
  Result<BucketRead> Complete(const std::string& group, std::span<const Bucket> buckets,
                              PendingRead pending, Result<std::vector<uint64_t>> answer) const;

 private:
  // Flags the buckets that ended before the settle margin as immutable and looks them up.
  std::vector<uint8_t> LookUp(const std::string& group, std::span<const Bucket> buckets,
                              Instant now, BucketRead& read) const;
  // Reads again the buckets served from the cache after a reset made them stale.
  Status Reread(const std::string& group, std::span<const Bucket> buckets,
                std::vector<uint8_t>& flags, BucketRead& read) const;

  Store& store_;
  const KeySpace& keys_;
  BucketCache* cache_;
  Seconds settle_margin_;
};

}  // namespace hourglass::internal
