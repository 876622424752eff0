// What memcached's evictions do to decisions: a real server of 8 MB, filled by another tenant
// until it evicts a feature's buckets of earlier today while its day ledger, read by every check,
// stays. The check after that says its data was lost and still counts the lost hits in the day.
// And what a full server that evicts nothing (-M) does: it refuses, and forgets nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "hourglass/engine.h"
#include "hourglass/key_space.h"
#include "hourglass/memcached_store.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

constexpr int64_t kToday = 1'431'820'800;  // 2015-05-17 00:00:00 UTC
constexpr int64_t kNow = kToday + 10 * 3600 + 1800;

class EvictionTest : public ::testing::TestWithParam<MemcachedLayout> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(small_.running()) << small_.error();
    MemcachedOptions options;
    options.servers = {small_.address()};
    options.layout = GetParam();
    store_ = std::move(*MemcachedStore::Create(options));
  }
  // A process that starts now: nothing cached.
  Engine Fresh() { return *Engine::Create(*store_, clock_, EngineOptions{}); }

  testing::MemcachedServer small_{"127.0.0.1", 8};
  std::unique_ptr<MemcachedStore> store_;
  ManualClock clock_{FromUnix(kNow)};
};

TEST_P(EvictionTest, AFeatureWhoseEarlierHoursWereEvictedIsDeniedAsDegraded) {
  const Policy policy = {*ParseLimits("5/m, 90/d"), CountingMode::kAdmitted,
                         FailureMode::kFailOpen};
  ASSERT_TRUE(Fresh().Record("signup", "victim", 50, FromUnix(kToday + 2 * 3600 + 600)).ok());
  ASSERT_TRUE(Fresh().Record("signup", "victim", 40, FromUnix(kToday + 5 * 3600 + 1200)).ok());
  Result<Decision> d = Fresh().Check("signup", "victim", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed) << "the 91st hit of 90/d";
  EXPECT_FALSE(d->degraded);

  // Another tenant fills the server while the victim keeps being checked (its ledger is read by
  // every check: recently used, it outlives the buckets of hours no check reads any more).
  const std::string group = Fresh().keys().GroupKey("signup", "victim");
  const KeySpace::LedgerKeys ledger = KeySpace::Ledger(group, kToday / 86400);
  const std::vector<Window> day = {*Window::Sliding(Seconds{86400})};
  for (int round = 0; round < 15; ++round) {  // 300,000 items: more than 8 MB hold
    ASSERT_TRUE(small_.Fill(20000, "hg:signup:tenant" + std::to_string(round) + ":", 2));
    for (int i = 0; i < 3; ++i) small_.Raw("get " + ledger.added + " " + ledger.events + "\r\n");
  }
  ASSERT_GT(small_.Stat("evictions"), 0);
  // A count tells the loss too: the day still holds all 90, `missing` of them lost.
  const Result<Counts> counts = Fresh().Count("signup", "victim", day);
  ASSERT_TRUE(counts.ok());
  ASSERT_GT(counts->missing, 0u) << "no bucket of the victim was evicted";
  EXPECT_EQ(counts->windows[0].count, 90u);
  ASSERT_TRUE(small_.Raw("get " + ledger.added + "\r\n").starts_with("VALUE " + ledger.added))
      << "the ledger was evicted too: nothing can tell";

  // Without the ledger the check would read 90 - missing + 1 <= 90 and admit the 91st hit.
  d = Fresh().Check("signup", "victim", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->degraded);
  ASSERT_TRUE(d->store_error.has_value());
  EXPECT_EQ(d->store_error->code(), ErrorCode::kDataLoss) << d->store_error->ToString();
  EXPECT_FALSE(d->allowed) << "the lost hits still count in the day";
  ASSERT_EQ(d->limits.size(), 2u);
  EXPECT_EQ(d->limits[1].count, 90u);
  EXPECT_TRUE(d->limits[1].exceeded);
}

// A memcached run with -M evicts nothing: full, it refuses to store rather than forget. A check
// that needs a new item is then degraded, named as a full store with the fix, and answered per
// its failure mode; the counts it held are all still there. Counters only: an append memcached
// refuses for want of memory unlinks the item it would have grown, so the packed layout's pack
// is lost (the README's known limits).
class FullServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(full_.running()) << full_.error();
    MemcachedOptions options;
    options.servers = {full_.address()};
    options.layout = MemcachedLayout::kCounters;
    store_ = std::move(*MemcachedStore::Create(options));
  }
  Engine Fresh() { return *Engine::Create(*store_, clock_, EngineOptions{}); }

  testing::MemcachedServer full_{"127.0.0.1", 8, {"-M"}};
  std::unique_ptr<MemcachedStore> store_;
  ManualClock clock_{FromUnix(kNow)};
};

TEST_F(FullServerTest, ACheckOnAFullServerIsAStoreFullErrorAndForgetsNothing) {
  const Policy closed = {*ParseLimits("3/m"), CountingMode::kAdmitted, FailureMode::kFailClosed};
  const Policy open = {*ParseLimits("3/m"), CountingMode::kAdmitted, FailureMode::kFailOpen};
  ASSERT_TRUE(Fresh().Record("signup", "victim", 3, FromUnix(kNow - 30)).ok());
  ASSERT_TRUE(full_.Fill(300000, "hg:signup:tenant:"));  // more than 8 MB hold
  ASSERT_EQ(full_.Stat("evictions"), 0) << "-M: nothing evicted";

  Result<Decision> d = Fresh().Check("signup", "victim", closed);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->degraded);
  EXPECT_FALSE(d->allowed) << "fail closed";
  ASSERT_TRUE(d->store_error.has_value());
  EXPECT_EQ(d->store_error->code(), ErrorCode::kStoreFull) << d->store_error->ToString();
  EXPECT_THAT(d->store_error->message(), ::testing::HasSubstr(full_.address()));
  EXPECT_THAT(d->store_error->message(), ::testing::HasSubstr("-M"));
  EXPECT_THAT(d->store_error->message(), ::testing::HasSubstr("give it more memory"));
  d = Fresh().Check("signup", "newcomer", open);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->degraded && d->allowed) << "fail open";
  EXPECT_EQ(d->store_error->code(), ErrorCode::kStoreFull);

  const std::vector<Window> minute = {*Window::Sliding(Seconds{60})};
  Result<Counts> counts = Fresh().Count("signup", "victim", minute);
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(counts->windows[0].count, 3u) << "refused, not forgotten";
  EXPECT_EQ(counts->missing, 0u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, EvictionTest,
                         ::testing::Values(MemcachedLayout::kCounters, MemcachedLayout::kPacked),
                         [](const ::testing::TestParamInfo<MemcachedLayout>& param) {
                           return param.param == MemcachedLayout::kPacked ? "packed" : "counters";
                         });

}  // namespace
}  // namespace hourglass
