// Ladders: validation, parsing, bucket arithmetic.
#include "hourglass/ladder.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hourglass
