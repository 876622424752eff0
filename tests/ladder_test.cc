// Ladders: validation, parsing, bucket arithmetic.
#include "hourglass/ladder.h"

#include <gtest/gtest.h>

#include <random>

#include "hourglass/planner.h"

namespace hourglass {
namespace {

TEST(Ladder, DefaultIsSecondsMinutesHours) {
  EXPECT_EQ(Ladder::Default().ToString(), "1s,1m,1h");
  EXPECT_EQ(Ladder::Default().levels(), 3u);
}

TEST(Ladder, ParsesDurations) {
  Result<Ladder> ladder = Ladder::Parse("1s, 1m, 1h, 1d");
  ASSERT_TRUE(ladder.ok()) << ladder.error().message();
  EXPECT_EQ(ladder->widths(),
            (std::vector<Seconds>{Seconds{1}, Seconds{60}, Seconds{3600}, Seconds{86400}}));
  EXPECT_TRUE(Ladder::Parse("1,10,60").ok());
}

TEST(Ladder, RejectsLaddersThatCannotBeExact) {
  EXPECT_NE(Ladder::Parse("2s,1m").error().message().find("first level must be 1s"),
            std::string::npos);
  EXPECT_NE(Ladder::Parse("1s,7s,1m").error().message().find("multiple of level 1"),
            std::string::npos);
  EXPECT_FALSE(Ladder::Parse("1s,1m,1m").ok());
  EXPECT_FALSE(Ladder::Parse("1s,1q").ok());
  EXPECT_FALSE(Ladder::Parse("").ok());
  EXPECT_FALSE(Ladder::Create({}).ok());
  EXPECT_FALSE(Ladder::Parse("1,2,4,8,16,32,64,128,256").ok());  // nine levels
}

TEST(Ladder, BucketAtFloorsEvenBeforeTheEpoch) {
  const Ladder ladder = Ladder::Default();
  EXPECT_EQ(ladder.BucketAt(1, 119), (Bucket{1, 1}));
  EXPECT_EQ(ladder.BucketAt(1, 120), (Bucket{1, 2}));
  EXPECT_EQ(ladder.BucketAt(2, -1), (Bucket{2, -1}));
  EXPECT_EQ(FloorDiv(-60, 60), -1);
  EXPECT_EQ(FloorDiv(-61, 60), -2);
}

TEST(Ladder, CoverBucketsAtMostIsTheWorstCoverOfASpan) {
  const Ladder ladder = Ladder::Default();
  EXPECT_EQ(ladder.CoverBucketsAtMost(Seconds{86400}), 24u + 2 * 59 + 2 * 59);
  EXPECT_EQ(ladder.CoverBucketsAtMost(Seconds{31 * 86400}), 744u + 2 * 59 + 2 * 59);
  // A day less two seconds, from 1 s into an hour: 59 seconds and 59 minutes of its first hour,
  // 22 hours, then 59 minutes and 59 seconds of its last; two short of the bound.
  const int64_t start = 1'800'000'000 + 1;
  const ReadPlan plan =
      PlanReads(ladder, std::vector<Span>{{start, start + 86400 - 3}}, std::nullopt,
                CoverOptions{.complements = false, .changing_from = std::nullopt});
  EXPECT_EQ(plan.reads.size(), 59u + 59 + 22 + 59 + 59);
}

TEST(Ladder, CoverBucketsAtMostBoundsEveryPlannedCover) {
  std::mt19937_64 rng(39);
  // Up to a month on ladders with an hour or a day on top (a month of 2 s buckets would be a
  // cover of a million).
  const std::vector<std::pair<const char*, int64_t>> ladders = {{"1s,1m,1h", 31 * 86400},
                                                                {"1s,1m,1h,1d", 31 * 86400},
                                                                {"1s,10s,5m,1h", 31 * 86400},
                                                                {"1s,2s", 3600}};
  for (const auto& [spec, longest] : ladders) {
    const Ladder ladder = *Ladder::Parse(spec);
    for (int i = 0; i < 500; ++i) {
      const int64_t length = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(longest));
      const int64_t first = 1'700'000'000 + static_cast<int64_t>(rng() % 86400);
      const Span span{first, first + length - 1};
      const std::optional<int64_t> now =
          rng() % 2 == 0 ? std::optional<int64_t>(span.last) : std::nullopt;
      const CoverOptions options{.complements = rng() % 2 == 0,
                                 .changing_from = span.last - static_cast<int64_t>(rng() % 10)};
      const ReadPlan plan = PlanReads(ladder, std::vector<Span>{span}, now, options);
      ASSERT_LE(plan.reads.size(), ladder.CoverBucketsAtMost(Seconds{length}))
          << spec << " [" << span.first << ", " << span.last << "]";
    }
  }
}

}  // namespace
}  // namespace hourglass
