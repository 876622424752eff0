// The engine's process-local caches: immutable bucket values under a generation, and clients
// blocked until a time before which they certainly stay denied.
#include "hot_path_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace hourglass::internal {
namespace {

constexpr uint8_t kImmutable = BucketCache::kImmutable;
constexpr uint8_t kCached = BucketCache::kCached;

TEST(BucketCache, ServesOnlyImmutableBucketsStoredUnderTheCurrentGeneration) {
  BucketCache cache(64, 64, Ladder::Default());
  const std::vector<Bucket> buckets = {{0, 10}, {0, 11}, {1, 3}};
  ASSERT_TRUE(cache.Sync("g", 7));
  std::vector<uint8_t> flags = {kImmutable, 0, kImmutable};
  cache.Store("g", 7, buckets, flags, std::vector<uint64_t>{4, 5, 6});

  std::vector<uint8_t> looked = {kImmutable, kImmutable, kImmutable};
  std::vector<uint64_t> values(3, 0);
  cache.Lookup("g", buckets, looked, values);
  EXPECT_EQ(looked, (std::vector<uint8_t>{kImmutable | kCached, kImmutable, kImmutable | kCached}));
  EXPECT_EQ(values, (std::vector<uint64_t>{4, 0, 6})) << "the mutable bucket was not kept";

  std::vector<uint8_t> mutable_now = {0, 0, 0};
  std::vector<uint64_t> none(3, 0);
  cache.Lookup("g", buckets, mutable_now, none);
  EXPECT_EQ(none, (std::vector<uint64_t>{0, 0, 0})) << "only buckets asked for as immutable";
}

TEST(BucketCache, ANewGenerationDropsWhatWasCached) {
  BucketCache cache(64, 64, Ladder::Default());
  const std::vector<Bucket> buckets = {{0, 10}};
  ASSERT_TRUE(cache.Sync("g", 1));
  std::vector<uint8_t> flags = {kImmutable};
  cache.Store("g", 1, buckets, flags, std::vector<uint64_t>{9});
  EXPECT_FALSE(cache.Sync("g", 2)) << "a reset happened";
  std::vector<uint8_t> looked = {kImmutable};
  std::vector<uint64_t> values = {0};
  cache.Lookup("g", buckets, looked, values);
  EXPECT_EQ(looked[0], kImmutable);
  // Values read under an older generation are not kept.
  cache.Store("g", 1, buckets, flags, std::vector<uint64_t>{9});
  cache.Lookup("g", buckets, looked, values);
  EXPECT_EQ(looked[0], kImmutable);
}

TEST(BucketCache, InvalidateForgetsAGroup) {
  BucketCache cache(64, 64, Ladder::Default());
  const std::vector<Bucket> buckets = {{0, 10}};
  ASSERT_TRUE(cache.Sync("g", 0));
  std::vector<uint8_t> flags = {kImmutable};
  cache.Store("g", 0, buckets, flags, std::vector<uint64_t>{3});
  cache.Invalidate("g");
  std::vector<uint8_t> looked = {kImmutable};
  std::vector<uint64_t> values = {0};
  cache.Lookup("g", buckets, looked, values);
  EXPECT_EQ(looked[0], kImmutable);
}

TEST(BucketCache, StaysWithinItsBucketBoundKeepingTheNewest) {
  BucketCache cache(16, 16, Ladder::Default());
  ASSERT_TRUE(cache.Sync("g", 0));
  for (int64_t i = 0; i < 100; ++i) {
    const std::vector<Bucket> one = {{0, i}};
    std::vector<uint8_t> flags = {kImmutable};
    cache.Store("g", 0, one, flags, std::vector<uint64_t>{static_cast<uint64_t>(i)});
  }
  size_t cached = 0;
  for (int64_t i = 0; i < 100; ++i) {
    const std::vector<Bucket> one = {{0, i}};
    std::vector<uint8_t> flags = {kImmutable};
    std::vector<uint64_t> values = {0};
    cache.Lookup("g", one, flags, values);
    if (flags[0] & kCached) {
      ++cached;
      EXPECT_EQ(values[0], static_cast<uint64_t>(i));
    }
  }
  EXPECT_LE(cached, 16u);
  std::vector<uint8_t> newest = {kImmutable};
  std::vector<uint64_t> value = {0};
  cache.Lookup("g", std::vector<Bucket>{{0, 99}}, newest, value);
  EXPECT_TRUE(newest[0] & kCached) << "the newest bucket is kept";
}

TEST(BucketCache, AFullFeatureKeepsTheBucketsThatEndLastWhateverTheirLevel) {
  BucketCache cache(16, 16, Ladder::Default());
  ASSERT_TRUE(cache.Sync("g", 0));
  constexpr int64_t kHour = 500'000;  // the hour that starts at 1,800,000,000
  std::vector<Bucket> hours, old_seconds;
  for (int64_t h = kHour - 8; h < kHour; ++h) hours.push_back({2, h});
  for (int64_t s = 0; s < 8; ++s) old_seconds.push_back({0, (kHour - 10) * 3600 + s});
  const std::vector<uint8_t> immutable(8, kImmutable);
  cache.Store("g", 0, hours, immutable, std::vector<uint64_t>(8, 1));
  cache.Store("g", 0, old_seconds, immutable, std::vector<uint64_t>(8, 2));
  // Full: one more drops the half that ends first, the seconds of ten hours ago.
  const std::vector<Bucket> recent = {{0, kHour * 3600 - 5}};
  cache.Store("g", 0, recent, std::vector<uint8_t>{kImmutable}, std::vector<uint64_t>{3});
  const auto cached = [&](const std::vector<Bucket>& buckets) {
    std::vector<uint8_t> flags(buckets.size(), kImmutable);
    std::vector<uint64_t> values(buckets.size(), 0);
    cache.Lookup("g", buckets, flags, values);
    return static_cast<size_t>(std::count(flags.begin(), flags.end(), kImmutable | kCached));
  };
  EXPECT_EQ(cached(hours), 8u) << "the last eight hours end after the old seconds";
  EXPECT_EQ(cached(old_seconds), 0u);
  EXPECT_EQ(cached(recent), 1u);
}

BlockedCache::Entry Blocked(Instant at, Instant until, uint64_t hits) {
  return BlockedCache::Entry{at, until, hits, Decision{}, {}, {}};
}

TEST(BlockedCache, DeniesUntilTheEarliestRetryOnly) {
  BlockedCache cache(64, Seconds{5});
  const Instant t = FromUnix(1'700'000'000);
  cache.Put("k", Blocked(t, t + Seconds{3}, 1), cache.Epoch("k"));
  EXPECT_TRUE(cache.Get("k", t, 1) != nullptr);
  EXPECT_TRUE(cache.Get("k", t + Seconds{2}, 1) != nullptr);
  EXPECT_FALSE(cache.Get("k", t + Seconds{3}, 1) != nullptr) << "until is exclusive";
  EXPECT_FALSE(cache.Get("other", t, 1) != nullptr);
}

TEST(BlockedCache, NeverAnswersPastItsMaxAgeForASmallerCostOrFromThePast) {
  BlockedCache cache(64, Seconds{5});
  const Instant t = FromUnix(1'700'000'000);
  cache.Put("k", Blocked(t, t + Seconds{60}, 2), cache.Epoch("k"));
  EXPECT_FALSE(cache.Get("k", t + Seconds{5}, 2) != nullptr) << "re-checked after max age";
  EXPECT_FALSE(cache.Get("k", t, 1) != nullptr) << "a cheaper hit may fit";
  EXPECT_TRUE(cache.Get("k", t, 3) != nullptr) << "a dearer one certainly does not";
  EXPECT_FALSE(cache.Get("k", t - Seconds{1}, 2) != nullptr);
}

TEST(BlockedCache, StaysWithinItsEntryBound) {
  BlockedCache cache(16, Seconds{5});  // one entry per shard
  const Instant t = FromUnix(1'700'000'000);
  for (int i = 0; i < 1000; ++i) {
    const std::string key = "k" + std::to_string(i);
    cache.Put(key, Blocked(t, t + Seconds{3}, 1), cache.Epoch(key));
  }
  int held = 0;
  for (int i = 0; i < 1000; ++i) held += cache.Get("k" + std::to_string(i), t, 1) ? 1 : 0;
  EXPECT_LE(held, 16);
  EXPECT_GE(held, 1);
}

// A decision read before a reset (its epoch older than the reset's Forget) is not cached after it:
// the client it denied fits again.
TEST(BlockedCache, ADenialReadBeforeAResetIsNotCachedAfterIt) {
  BlockedCache cache(64, Seconds{5});
  const Instant t = FromUnix(1'700'000'000);
  const std::string key = std::string("hg:signup:ann") + '\x1f' + "2/m";
  const uint64_t before = cache.Epoch(key);
  cache.Forget("hg:signup:ann");
  cache.Put(key, Blocked(t, t + Seconds{3}, 1), before);
  EXPECT_FALSE(cache.Get(key, t, 1) != nullptr);
  cache.Put(key, Blocked(t, t + Seconds{3}, 1), cache.Epoch(key));
  EXPECT_TRUE(cache.Get(key, t, 1) != nullptr) << "a decision read after it is";
}

}  // namespace
}  // namespace hourglass::internal
