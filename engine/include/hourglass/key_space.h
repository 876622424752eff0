// The one place that turns event+feature and buckets into store keys and TTLs.
//
//   <namespace>:<event>:<feature>                     the group key (server affinity)
//   <group>:<level width>:<bucket index>              a bucket
//   <group>:g                                         the feature's generation (bumped by resets)
//
//   KeySpace keys = engine.keys();
//   std::string group = keys.GroupKey("signup", "ann@example.com");
//   std::vector<Increment> hit = keys.HitIncrements(group, ToUnix(now), 1);
//
// Thread-safety: immutable value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/key_codec.h"
#include "hourglass/ladder.h"
#include "hourglass/store.h"

namespace hourglass {

class KeySpace {
 public:
  // `retention`: the longest window answered; `settle_margin`: allowance for clock skew.
  KeySpace(KeyCodec codec, Ladder ladder, Seconds retention, Seconds settle_margin)
      : codec_(std::move(codec)),
        ladder_(std::move(ladder)),
        retention_(retention),
        settle_margin_(settle_margin) {}

  std::string GroupKey(std::string_view event, std::string_view feature) const {
    return codec_.GroupKey(event, feature);
  }
  std::string BucketKey(const std::string& group, const Bucket& bucket) const {
    return KeyCodec::BucketKey(group, ladder_.width(bucket.level), bucket.index);
  }
  static std::string GenerationKey(const std::string& group) { return group + ":g"; }

  // How long a bucket of `level` lives after its creation: the retention, plus the next level's
  // width (its buckets serve as the complement of a partial parent at a window's far edge), plus
  // the settle margin.
  Seconds Ttl(size_t level) const;
  // One increment of `delta` per level for a hit at second `t`.
  std::vector<Increment> HitIncrements(const std::string& group, int64_t t, int64_t delta) const;

  const Ladder& ladder() const { return ladder_; }
  const KeyCodec& codec() const { return codec_; }

 private:
  KeyCodec codec_;
  Ladder ladder_;
  Seconds retention_;
  Seconds settle_margin_;
};

}  // namespace hourglass
