// Planner: every cover is exact against a brute-force count on random traces, for random ladders,
// spans and instants, with and without the open-bucket and complement shortcuts; and the key
// bounds of docs/design.md hold.
#include "hourglass/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>

namespace hourglass {
namespace {

struct Hit {
  int64_t t;
  uint64_t cost;
};

// The ground truth: a list of hits, and bucket values summed from it.
class Trace {
 public:
  void Add(int64_t t, uint64_t cost) { hits_.push_back(Hit{t, cost}); }
  uint64_t CountIn(Span span) const {
    uint64_t n = 0;
    for (const Hit& h : hits_) n += span.Contains(h.t) ? h.cost : 0;
    return n;
  }
  uint64_t BucketValue(const Ladder& ladder, const Bucket& b) const {
    const int64_t w = ladder.width(b.level).count();
    return CountIn(Span{b.index * w, b.index * w + w - 1});
  }

 private:
  std::vector<Hit> hits_;
};

Ladder RandomLadder(std::mt19937_64& rng) {
  static const int64_t kFactors[] = {2, 3, 4, 5, 6, 10, 12, 60};
  std::vector<Seconds> widths = {Seconds{1}};
  const int levels = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int i = 1; i < levels; ++i) {
    widths.push_back(widths.back() * kFactors[rng() % std::size(kFactors)]);
  }
  return *Ladder::Create(widths);
}

// Checks one cover: pieces are disjoint, in order, cover exactly the (clipped) span, and each
// piece's signed sum equals the true count of its span.
void ExpectExactCover(const Ladder& ladder, const Trace& trace, Span span,
                      std::optional<int64_t> now, CoverOptions options) {
  const std::vector<Piece> pieces = CoverSpan(ladder, span, now, options);
  const Span expected{span.first, now ? std::min(span.last, *now) : span.last};
  uint64_t total = 0;
  int64_t next = expected.first;
  for (const Piece& piece : pieces) {
    ASSERT_EQ(piece.span.first, next) << "pieces must tile the span in order";
    ASSERT_LE(piece.span.first, piece.span.last);
    next = piece.span.last + 1;
    int64_t sum = 0;
    for (const Term& term : piece.terms) {
      sum += term.sign * static_cast<int64_t>(trace.BucketValue(ladder, term.bucket));
    }
    ASSERT_EQ(sum, static_cast<int64_t>(trace.CountIn(piece.span)))
        << "piece [" << piece.span.first << "," << piece.span.last << "]";
    total += static_cast<uint64_t>(sum);
    for (const Term& term : piece.terms) {
      const int64_t end = (term.bucket.index + 1) * ladder.width(term.bucket.level).count() - 1;
      if (term.sign < 0 && options.changing_from) {
        ASSERT_LT(end, *options.changing_from) << "subtracts a bucket that may still change";
      }
    }
  }
  if (expected.length() > 0) {
    ASSERT_EQ(next, expected.last + 1) << "cover stops early";
  }
  ASSERT_EQ(total, trace.CountIn(expected));
}

// Values come from a store other clients write too: sums saturate at the largest count, never
// wrap to a small one or read a value >= 2^63 as negative.
TEST(ReadPlan, SumsSaturateInsteadOfWrapping) {
  const std::vector<Span> spans = {Span{100, 101}};
  const ReadPlan plan = PlanReads(Ladder::Default(), spans, std::nullopt);
  ASSERT_EQ(plan.reads.size(), 2u);
  const std::vector<uint64_t> halves(2, uint64_t{1} << 63);
  EXPECT_EQ(plan.Total(0, halves), std::numeric_limits<uint64_t>::max());
  const std::vector<uint64_t> small = {3, 4};
  EXPECT_EQ(plan.Total(0, small), 7u);
}

TEST(PlannerProperty, CoversAreExactOnRandomTracesLaddersAndInstants) {
  std::mt19937_64 rng(20261121);
  int cases = 0;
  for (int round = 0; round < 300; ++round) {
    const Ladder ladder = RandomLadder(rng);
    const int64_t top = ladder.widths().back().count();
    const int64_t base = 1'700'000'000 + static_cast<int64_t>(rng() % 100000);
    const int64_t range = std::max<int64_t>(3 * top, 200);
    Trace trace;
    const int hits = std::uniform_int_distribution<int>(0, 400)(rng);
    for (int i = 0; i < hits; ++i) {
      trace.Add(base + static_cast<int64_t>(rng() % static_cast<uint64_t>(range)), 1 + rng() % 3);
    }
    for (int q = 0; q < 20; ++q, ++cases) {
      const int64_t last = base + static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
      const int64_t length = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
      const Span span{last - length + 1, last};
      // Without complements, with them, and with them where recent buckets may still change.
      const int64_t changing_from = span.last - static_cast<int64_t>(rng() % 200) + 100;
      for (const CoverOptions& options :
           {CoverOptions{false, std::nullopt}, CoverOptions{true, std::nullopt},
            CoverOptions{true, changing_from}}) {
        SCOPED_TRACE(::testing::Message()
                     << "ladder " << ladder.ToString() << " span [" << span.first << ","
                     << span.last << "] complements " << options.complements << " changing from "
                     << options.changing_from.value_or(-1));
        ExpectExactCover(ladder, trace, span, std::nullopt, options);
      }
    }
  }
  EXPECT_EQ(cases, 6000);
}

TEST(PlannerProperty, OpenBucketShortcutIsExactWhenNoHitIsLaterThanNow) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    const Ladder ladder = RandomLadder(rng);
    const int64_t top = ladder.widths().back().count();
    const int64_t base = 1'700'000'000 + static_cast<int64_t>(rng() % 100000);
    const int64_t range = std::max<int64_t>(3 * top, 200);
    const int64_t now = base + static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
    Trace trace;  // nothing after now: that is what "now" means
    for (int i = 0; i < 300; ++i) {
      trace.Add(base + static_cast<int64_t>(rng() % static_cast<uint64_t>(now - base + 1)), 1);
    }
    for (int q = 0; q < 20; ++q) {
      const int64_t length = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
      // Windows ending at now (the live case), and a few ending later (clipped to now).
      const int64_t last = q % 5 == 0 ? now + static_cast<int64_t>(rng() % 100) : now;
      const Span span{last - length + 1, last};
      for (const CoverOptions& options :
           {CoverOptions{false, std::nullopt}, CoverOptions{true, std::nullopt},
            CoverOptions{true, now - 5}}) {
        SCOPED_TRACE(::testing::Message() << "ladder " << ladder.ToString() << " now " << now
                                          << " span [" << span.first << "," << span.last << "]");
        ExpectExactCover(ladder, trace, span, now, options);
      }
    }
  }
}

TEST(PlannerProperty, UnionPlanGivesEachWindowItsExactCount) {
  std::mt19937_64 rng(99);
  const Ladder ladder = Ladder::Default();
  for (int round = 0; round < 200; ++round) {
    const int64_t now = 1'700'000'000 + static_cast<int64_t>(rng() % 1000000);
    Trace trace;
    for (int i = 0; i < 500; ++i) {
      trace.Add(now - static_cast<int64_t>(rng() % 90000), 1 + rng() % 2);
    }
    const std::vector<Span> spans = {
        {now, now}, {now - 59, now}, {now - 3599, now}, {now - 86399, now}};
    const bool live = round % 2 == 0;
    const ReadPlan plan = PlanReads(ladder, spans, live ? std::optional(now) : std::nullopt);
    std::vector<uint64_t> values;
    for (const Bucket& b : plan.reads) values.push_back(trace.BucketValue(ladder, b));
    // No bucket is read twice.
    std::vector<Bucket> sorted = plan.reads;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
    for (size_t w = 0; w < spans.size(); ++w) {
      EXPECT_EQ(plan.Total(w, values), trace.CountIn(spans[w])) << "window " << w;
    }
  }
}

// A minute window ending two seconds ago, in a minute whose later seconds are still live: the
// minute bucket minus those seconds would race live writes, so the seconds are read one by one.
TEST(Planner, NeverSubtractsBucketsThatMayStillChange) {
  const Ladder ladder = Ladder::Default();
  const int64_t minute = 1'700'000'040;  // a multiple of 60
  const int64_t now = minute + 50, t0 = now - 2;
  const Span span{t0 - 59, t0};
  const auto subtracted = [&](CoverOptions options) {
    std::vector<Bucket> out;
    for (const Piece& piece : CoverSpan(ladder, span, std::nullopt, options)) {
      for (const Term& term : piece.terms) {
        if (term.sign < 0) out.push_back(term.bucket);
      }
    }
    return out;
  };
  EXPECT_TRUE(std::ranges::count(subtracted({true, std::nullopt}), Bucket{0, now}) == 1)
      << "without the rule, the live second is subtracted";
  for (const Bucket& b : subtracted({true, now - 5})) EXPECT_LT(b.index, now - 5);
}

// docs/design.md: a 24 h window on the default ladder needs at most 142 buckets at any instant with
// the greedy cover, and the shortcuts read fewer.
TEST(PlannerBounds, DayWindowReadsAtMost142KeysAtEveryInstantOfAnHour) {
  const Ladder ladder = Ladder::Default();
  const int64_t base = 1'700'000'000 - 1'700'000'000 % 3600;
  size_t greedy_max = 0, past_max = 0, live_max = 0, live_min = 1000;
  double past_sum = 0, live_sum = 0;
  for (int64_t t = base; t < base + 3600; ++t) {
    const Span day{t - 86399, t};
    const size_t greedy =
        PlanReads(ladder, {&day, 1}, std::nullopt, {false, std::nullopt}).reads.size();
    const size_t past = PlanReads(ladder, {&day, 1}, std::nullopt).reads.size();
    const size_t live = PlanReads(ladder, {&day, 1}, t).reads.size();
    // What the engine plans: the same keys, since the day's far edge settled long ago.
    EXPECT_EQ(PlanReads(ladder, {&day, 1}, t, {true, t - 5}).reads.size(), live);
    greedy_max = std::max(greedy_max, greedy);
    past_max = std::max(past_max, past);
    live_max = std::max(live_max, live);
    live_min = std::min(live_min, live);
    past_sum += static_cast<double>(past);
    live_sum += static_cast<double>(live);
  }
  EXPECT_EQ(greedy_max, 142u);  // the worst case, reached
  EXPECT_LE(past_max, 142u);
  EXPECT_LT(past_sum / 3600, 142.0);
  EXPECT_LE(live_max, past_max);
  EXPECT_LT(live_sum, past_sum);
  EXPECT_GE(live_min, 24u);  // 23 whole hours and the open hour at the least
}

TEST(PlannerBounds, OneSecondWindowAtNowIsOneKey) {
  const Ladder ladder = Ladder::Default();
  EXPECT_EQ(CoverSpan(ladder, Span{1000, 1000}, 1000).size(), 1u);
  const std::vector<Piece> pieces = CoverSpan(ladder, Span{1000, 1000}, 1000);
  ASSERT_EQ(pieces[0].terms.size(), 1u);
  EXPECT_EQ(pieces[0].terms[0].bucket, (Bucket{0, 1000}));
}

TEST(PlannerBounds, LiveMinuteWindowUsesTheOpenMinuteBucket) {
  const Ladder ladder = Ladder::Default();
  const int64_t now = 1'700'000'000 - 1'700'000'000 % 60 + 30;  // half-way through a minute
  const std::vector<Piece> pieces = CoverSpan(ladder, Span{now - 59, now}, now);
  ASSERT_FALSE(pieces.empty());
  ASSERT_EQ(pieces.back().terms.size(), 1u);
  EXPECT_EQ(pieces.back().terms[0].bucket, (Bucket{1, now / 60}));
  EXPECT_EQ(pieces.back().span, (Span{now - 30, now}));
}

TEST(Planner, EmptySpanHasNoPieces) {
  EXPECT_TRUE(CoverSpan(Ladder::Default(), Span{10, 9}, std::nullopt).empty());
  // A span entirely after now holds no hit.
  EXPECT_TRUE(CoverSpan(Ladder::Default(), Span{100, 200}, 50).empty());
}

}  // namespace
}  // namespace hourglass
