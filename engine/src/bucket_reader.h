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

class BucketReader {
 public:
  // `cache` may be null (no caching).
  BucketReader(Store& store, const KeySpace& keys, BucketCache* cache, Seconds settle_margin)
      : store_(store), keys_(keys), cache_(cache), settle_margin_(settle_margin) {}

  // Applies `increments` and reads `buckets` of `group` in one batch.
  Result<BucketRead> Read(const std::string& group, std::span<const Bucket> buckets,
                          std::vector<Increment> increments, Instant now) const;

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
