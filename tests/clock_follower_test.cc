// ClockFollower: offsets within a second are noise and not followed; from two seconds on the
// process follows the servers' median, keeps its correction through a second's jitter, and
// returns to its own clock once they agree; each change (and servers that disagree) is a warning.
#include "hourglass/clock_follower.h"

#include <gtest/gtest.h>

#include <vector>

namespace hourglass {
namespace {

using std::chrono::seconds;

ClockFollower::Step Read(ClockFollower& f, std::vector<int64_t> offsets) {
  std::vector<ClockOffset> readings;
  for (size_t i = 0; i < offsets.size(); ++i) {
    readings.push_back({"10.0.0." + std::to_string(i + 1) + ":11211", offsets[i]});
  }
  return f.Update(readings);
}

TEST(ClockFollower, ASecondIsNoiseAndIsNotFollowed) {
  ClockFollower f;
  for (int64_t offset : {0, 1, -1, 1}) {
    const ClockFollower::Step step = Read(f, {offset});
    EXPECT_EQ(step.correction, seconds{0}) << offset;
    EXPECT_FALSE(step.warning) << *step.warning;
  }
}

TEST(ClockFollower, AClockTenSecondsBehindFollowsTheServersAndSaysSo) {
  ClockFollower f;
  ClockFollower::Step step = Read(f, {-10});
  EXPECT_EQ(step.correction, seconds{10});
  ASSERT_TRUE(step.warning);
  EXPECT_NE(step.warning->find("10 s behind the store's"), std::string::npos) << *step.warning;
  EXPECT_NE(step.warning->find("(+10 s)"), std::string::npos) << *step.warning;
  // A second's jitter keeps the correction, silently.
  for (int64_t offset : {-9, -11, -10}) {
    step = Read(f, {offset});
    EXPECT_EQ(step.correction, seconds{10});
    EXPECT_FALSE(step.warning);
  }
  // The host's clock was fixed: back to it.
  step = Read(f, {0});
  EXPECT_EQ(step.correction, seconds{0});
  ASSERT_TRUE(step.warning);
  EXPECT_NE(step.warning->find("agrees with the store's again"), std::string::npos);
}

TEST(ClockFollower, AheadIsCorrectedBackAndNoAnswerChangesNothing) {
  ClockFollower f;
  EXPECT_EQ(Read(f, {3}).correction, seconds{-3});
  EXPECT_EQ(f.Update({}).correction, seconds{-3});
  EXPECT_EQ(Read(f, {30}).correction, seconds{-30}) << "a step of the host's clock is followed";
}

TEST(ClockFollower, TheMedianServerIsFollowedAndDisagreementIsWarned) {
  ClockFollower f;
  const ClockFollower::Step step = Read(f, {-10, -10, 5});
  EXPECT_EQ(step.correction, seconds{10});
  ASSERT_TRUE(step.warning);
  EXPECT_NE(step.warning->find("servers' clocks disagree by 15 s"), std::string::npos)
      << *step.warning;
}

}  // namespace
}  // namespace hourglass
