// The ledger of hits decided locally while the store fails: decisions against the share, the
// write-back claims, take-backs, the bound on what it holds, and age.
#include "hourglass/local_ledger.h"

#include <gtest/gtest.h>

#include <vector>

namespace hourglass {
namespace {

using SecondHits = StoreFallback::SecondHits;

constexpr int64_t kT = 1'700'000'000;

// The span of a sliding window of `w` seconds ending at `t`.
Span Last(int64_t t, int64_t w) { return Span{t - w + 1, t}; }

uint64_t Sum(const std::vector<CountedSpan>& pieces) {
  uint64_t n = 0;
  for (const CountedSpan& p : pieces) n += p.hits;
  return n;
}

// One check of 1 hit against a sliding minute of at most `max`, recorded.
StoreFallback::Verdict Minute(LocalLedger& ledger, int64_t t, uint64_t max,
                              const std::string& group = "e:f", bool attempts = false) {
  const Span span = Last(t, 60);
  const uint64_t maxes[] = {max};
  return ledger.Decide(group, {&span, 1}, maxes, {.t = t, .attempts = attempts});
}

TEST(LocalLedger, AdmitsUpToTheMaxPerWindowAndHoldsWhatItAdmitted) {
  LocalLedger ledger({.services = 2});
  EXPECT_EQ(ledger.default_share(), (Share{1, 2}));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Minute(ledger, kT + i, 3).allowed);
  StoreFallback::Verdict denied = Minute(ledger, kT + 3, 3);
  EXPECT_FALSE(denied.allowed);
  EXPECT_FALSE(denied.recorded);
  EXPECT_EQ(Sum(denied.pieces[0]), 3u);
  // The first hit leaves the minute at kT + 60.
  EXPECT_TRUE(Minute(ledger, kT + 60, 3).allowed);
  EXPECT_TRUE(ledger.AnyPending());
  EXPECT_EQ(ledger.stats().pending_hits, 4u);
  EXPECT_EQ(ledger.stats().decided, 5u);
  EXPECT_EQ(ledger.stats().admitted, 4u);
}

// Services not counted yet: no share keeps them within the limit together, so none is given.
TEST(LocalLedger, UncountedServicesGetNoShareUntilCounted) {
  LocalLedger ledger({.services = 0});
  EXPECT_EQ(ledger.default_share(), (Share{0, 1}));
  EXPECT_EQ(ledger.default_share().Of(100), 0u);
  EXPECT_EQ(ledger.default_share().ToString(), "none");
  EXPECT_EQ(ledger.stats().services, 0u);
  ledger.SetServices(3);
  EXPECT_EQ(ledger.default_share(), (Share{1, 3}));
}

TEST(LocalLedger, AttemptsCountEvenWhenDenied) {
  LocalLedger ledger({});
  EXPECT_TRUE(Minute(ledger, kT, 1, "e:f", true).allowed);
  StoreFallback::Verdict second = Minute(ledger, kT + 1, 1, "e:f", true);
  EXPECT_FALSE(second.allowed);
  EXPECT_TRUE(second.recorded);
  EXPECT_EQ(Sum(second.pieces[0]), 2u);
  EXPECT_EQ(ledger.stats().pending_hits, 2u);
}

TEST(LocalLedger, ClaimedHitsAreClaimedOnceAndCountUntilTheyAgeOut) {
  LocalLedger ledger({.keep = Seconds{3600}});
  Minute(ledger, kT, 5);
  Minute(ledger, kT, 5);
  Minute(ledger, kT + 1, 5);
  const std::vector<SecondHits> claimed = ledger.Claim("e:f");
  EXPECT_EQ(claimed, (std::vector<SecondHits>{{kT, 2}, {kT + 1, 1}}));
  EXPECT_TRUE(ledger.Claim("e:f").empty()) << "claimed by one writer only";
  EXPECT_FALSE(ledger.AnyPending());
  // Claimed hits still count locally, before and after they are written.
  EXPECT_EQ(Sum(Minute(ledger, kT + 2, 5).pieces[0]), 4u);
  ledger.Release("e:f", claimed, StoreFallback::Landed::kYes);
  EXPECT_EQ(ledger.Claim("e:f"), (std::vector<SecondHits>{{kT + 2, 1}}));
  EXPECT_EQ(Sum(Minute(ledger, kT + 3, 5).pieces[0]), 5u);
  EXPECT_EQ(ledger.stats().written_back, 3u);
  // An hour later, nothing of it is held.
  // kT+2 is still being written back: kept for its Release.
  EXPECT_EQ(ledger.Sweep(FromUnix(kT + 3 + 3601)), 3u);
  EXPECT_EQ(ledger.stats().expired, 1u) << "kT+3's hit, never written back";
}

TEST(LocalLedger, AFailedWriteBackLeavesTheHitsPending) {
  LocalLedger ledger({});
  Minute(ledger, kT, 5);
  const std::vector<SecondHits> claimed = ledger.Claim("e:f");
  ledger.Release("e:f", claimed, StoreFallback::Landed::kNo);
  EXPECT_TRUE(ledger.AnyPending());
  EXPECT_EQ(ledger.PendingGroups(10), (std::vector<std::string>{"e:f"}));
  EXPECT_EQ(ledger.Claim("e:f"), claimed);
}

TEST(LocalLedger, ATakeBackAfterAClaimIsWrittenBackAsANegativeDelta) {
  LocalLedger ledger({});
  Minute(ledger, kT, 5);
  Minute(ledger, kT, 5);
  ledger.TakeBack("e:f", kT, 1);  // before a claim: only the pending count falls
  EXPECT_EQ(ledger.Claim("e:f"), (std::vector<SecondHits>{{kT, 1}}));
  ledger.TakeBack("e:f", kT, 1);  // after: the write-back must undo it
  EXPECT_EQ(ledger.Claim("e:f"), (std::vector<SecondHits>{{kT, -1}}));
  EXPECT_EQ(Sum(Minute(ledger, kT + 1, 5).pieces[0]), 1u) << "only the new hit";
}

// Hits whose batch or write-back timed out may be in the store: they count here, are not written
// (again), and are told.
TEST(LocalLedger, HitsTheStoreMayHoldCountButAreNotWrittenBack) {
  LocalLedger ledger({});
  const Span span = Last(kT, 60);
  const uint64_t maxes[] = {5};
  EXPECT_TRUE(ledger.Decide("e:f", {&span, 1}, maxes, {.t = kT, .sent = true}).recorded);
  EXPECT_FALSE(ledger.AnyPending());
  Minute(ledger, kT, 5);
  const std::vector<SecondHits> claimed = ledger.Claim("e:f");
  EXPECT_EQ(claimed, (std::vector<SecondHits>{{kT, 1}}));
  ledger.Release("e:f", claimed, StoreFallback::Landed::kUnknown);
  EXPECT_FALSE(ledger.AnyPending()) << "taken to have landed";
  EXPECT_EQ(ledger.stats().uncertain, 2u);
  EXPECT_EQ(ledger.stats().written_back, 0u);
  EXPECT_EQ(Sum(Minute(ledger, kT + 1, 5).pieces[0]), 3u);
}

TEST(LocalLedger, AFullLedgerDeniesWhatNeedsAnotherSecondAndSaysSo) {
  LocalLedger ledger({.max_seconds = 2});
  EXPECT_TRUE(Minute(ledger, kT, 10, "a").allowed);
  EXPECT_TRUE(Minute(ledger, kT, 10, "b").allowed);
  EXPECT_TRUE(Minute(ledger, kT, 10, "a").allowed) << "the same second needs no new entry";
  StoreFallback::Verdict full = Minute(ledger, kT, 10, "c");
  EXPECT_FALSE(full.allowed);
  EXPECT_TRUE(full.full);
  EXPECT_FALSE(full.recorded);
  EXPECT_EQ(ledger.stats().full, 1u);
  EXPECT_EQ(ledger.stats().held_seconds, 2u);
  // Written back and aged out, the room returns.
  ledger.Release("a", ledger.Claim("a"), StoreFallback::Landed::kYes);
  ledger.Release("b", ledger.Claim("b"), StoreFallback::Landed::kYes);
  ledger.Sweep(FromUnix(kT + 86401));
  EXPECT_TRUE(Minute(ledger, kT + 86401, 10, "c").allowed);
}

TEST(LocalLedger, AWindowCountsOnlyItsOwnSeconds) {
  LocalLedger ledger({});
  Minute(ledger, kT, 100);
  Minute(ledger, kT + 30, 100);
  const Span spans[] = {Last(kT + 31, 1), Last(kT + 31, 10), Last(kT + 31, 60)};
  const uint64_t maxes[] = {100, 100, 100};
  StoreFallback::Verdict v = ledger.Decide("e:f", spans, maxes, {.t = kT + 31, .record = false});
  EXPECT_EQ(Sum(v.pieces[0]), 0u);
  EXPECT_EQ(Sum(v.pieces[1]), 1u);
  EXPECT_EQ(Sum(v.pieces[2]), 2u);
  EXPECT_FALSE(v.recorded) << "a peek records nothing";
}

}  // namespace
}  // namespace hourglass
