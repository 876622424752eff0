// The one place that turns event+feature and buckets into store keys and TTLs.
//
//   <namespace>:<event>:<feature>                     the group key (server affinity)
//   <group>:<level width>:<bucket index>              a bucket
//   <group>:g                                         the feature's generation (bumped by resets)
//   <group>:d:<Unix day>, <group>:de:<Unix day>       the feature's ledger of a UTC day
//   <group>:b:<block seconds>:<slot>                  a penalty's strikes (Policy::block_for)
//
//   KeySpace keys = engine.keys();
//   std::string group = keys.GroupKey("signup", "ann@example.com");
//   std::vector<Increment> hit = keys.HitIncrements(group, ToUnix(now), 1);
//
// Thread-safety: immutable value.
#pragma once

#include <cstdint>
#include <optional>
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
  // Marks a settlement `id` (printable, at most 64 bytes) as applied: it applies once.
  static std::string SettledKey(const std::string& group, std::string_view id) {
    return group + ":s:" + std::string(id);
  }
  // The increment that bumps the generation (a reset, a write into settled buckets). The key
  // lives longer than any bucket once created, so a bump is seen.
  static Increment GenerationBump(const std::string& group) {
    return Increment{GenerationKey(group), 1, Seconds{60 * 86400}};
  }
  // The ledger: per feature and UTC day (`day` = Unix seconds / 86400), two counters that only
  // grow: `added` counts hits, `events` hits and take-backs. Today's net hits are 2 * added -
  // events. The buckets of the day tile its span, so a check that reads them all and finds fewer
  // hits than that knows the store lost some (memcached evicts without telling). A hit reaches
  // `events` then `added` after its buckets; a take-back reaches `events` before them: read
  // `added` first and `events` last, and the ledger never counts more than the buckets hold,
  // however writers interleave. `events` < `added` means `events` was lost: no comparison then.
  // Kept only when the ladder's top level divides a day and is shorter.
  struct LedgerKeys {
    std::string added, events;
  };
  static LedgerKeys Ledger(const std::string& group, int64_t day) {
    const std::string d = std::to_string(day);
    return {group + ":d:" + d, group + ":de:" + d};
  }
  bool keeps_ledger() const;
  // The keys a hit writes: one per level, and the ledger's two (with `ledger`, see HitIncrements).
  size_t KeysPerHit(bool ledger = true) const {
    return ladder_.levels() + (keeps_ledger() && ledger ? 2 : 0);
  }
  // The keys a take-back writes: one per level, and the ledger's events (with `ledger`).
  size_t KeysPerTakeBack(bool ledger = true) const {
    return ladder_.levels() + (keeps_ledger() && ledger ? 1 : 0);
  }
  // A ledger is read during its day only: it lives a day plus the settle margin from creation.
  Seconds LedgerTtl() const { return kLedgerSpan + settle_margin_; }
  static constexpr Seconds kLedgerSpan{86400};

  // How long a bucket of `level` lives after its creation: the retention, plus the next level's
  // width (its buckets serve as the complement of a partial parent at a window's far edge), plus
  // the settle margin.
  Seconds Ttl(size_t level) const;
  // One increment of `delta` per level for a hit at second `t`, and the ledger's when kept and
  // `ledger`: after them for a hit (delta > 0), before them for a take-back. A caller that leaves
  // a hit out of the ledger must leave out that hit's own take-back, and nothing else: the ledger
  // then counts fewer hits than the buckets hold, never more.
  std::vector<Increment> HitIncrements(const std::string& group, int64_t t, int64_t delta,
                                       bool ledger = true) const;

  // Penalties (Policy::block_for = B): a denial by a limit at second t strikes the feature: it is
  // blocked from t until t + B. Time is cut in slots of B seconds; the strike adds
  // kStrike + (t mod B) + 1 to its slot's key, so the key holds how many strikes it has (value /
  // kStrike) and the sum of their offsets + 1. A block starting in slot s ends in slot s + 1:
  // whether second t is blocked is read from the keys of t's slot and the one before. No strike
  // comes while the feature is blocked, so a slot holds one block's strikes: one, or a few that
  // raced on different clients, read as their mean (within a round trip of each other).
  static constexpr uint64_t kStrike = uint64_t{1} << 40;
  struct PenaltyKeys {
    std::string previous, current;  // the slot before t's, and t's
  };
  static PenaltyKeys Penalty(const std::string& group, Seconds block_for, int64_t t);
  // The strike of a denial at second t.
  Increment Strike(const std::string& group, Seconds block_for, int64_t t) const;
  // When the block covering second t ends, from the values of Penalty(group, block_for, t)'s keys
  // (0 when missing); nullopt when t is not blocked.
  static std::optional<Instant> BlockedUntil(Seconds block_for, int64_t t, uint64_t previous,
                                             uint64_t current);

  const Ladder& ladder() const { return ladder_; }
  const KeyCodec& codec() const { return codec_; }

 private:
  KeyCodec codec_;
  Ladder ladder_;
  Seconds retention_;
  Seconds settle_margin_;
};

}  // namespace hourglass
