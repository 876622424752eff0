// /v1/top's summaries across a restart: what one RecentTop saved, another reads back and
// answers the same queries with; minutes older than the window stay out; a file that is not one
// is refused naming it; a missing file is NotFound.
#include "hourglass/top_state.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_path.h"

namespace hourglass {
namespace {

const Instant kNow = FromUnix(1'800'000'030);

bool SameAnswer(const TopAnswer& a, const TopAnswer& b) {
  if (a.total != b.total || a.bound != b.bound || a.rows.size() != b.rows.size()) return false;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const TopRow &x = a.rows[i], &y = b.rows[i];
    if (x.feature != y.feature || x.estimate != y.estimate || x.error != y.error ||
        x.last.allowed != y.last.allowed || x.last.at != y.last.at) {
      return false;
    }
  }
  return true;
}

TEST(TopState, ASavedSummaryAnswersTheSameAfterARestart) {
  RecentTop before(8);
  for (int i = 0; i < 400; ++i) {  // more features than counters: errors and a bound
    const Instant at = kNow - Seconds{(i % 10) * 60};
    before.Record(i % 3 == 0 ? "login" : "signup", "user" + std::to_string(i % 23), 1 + i % 2,
                  i % 4 != 0, at);
  }
  before.Record("signup", std::string("bad\xff\xfe utf-8"), 1, false, kNow);
  const std::string path = testing::UniqueTempPath("top.json");
  ASSERT_TRUE(SaveTopState(before, path).ok());
  RecentTop after(8);
  ASSERT_TRUE(LoadTopState(after, path, kNow).ok());
  for (const char* event : {"login", "signup"}) {
    for (TopBy by : {TopBy::kHits, TopBy::kDenied}) {
      const TopAnswer was = before.Query(event, 15, by, 20, kNow);
      const TopAnswer is = after.Query(event, 15, by, 20, kNow);
      EXPECT_GT(was.total, 0u);
      // The one feature that is not UTF-8 is kept under a replaced name: the rest is the same.
      if (std::string(event) == "signup") continue;
      EXPECT_TRUE(SameAnswer(was, is)) << event << " by " << TopByName(by);
    }
  }
  EXPECT_EQ(after.Query("signup", 15, TopBy::kHits, 50, kNow).total,
            before.Query("signup", 15, TopBy::kHits, 50, kNow).total);

  RecentTop later(8);  // read 20 minutes on: every minute saved is out of the window
  ASSERT_TRUE(LoadTopState(later, path, kNow + Seconds{1200}).ok());
  EXPECT_EQ(later.Query("login", 15, TopBy::kHits, 20, kNow + Seconds{1200}).total, 0u);
  std::remove(path.c_str());
}

TEST(TopState, AMissingFileIsNotFoundAndAStrangeOneIsRefusedNamingIt) {
  RecentTop top(8);
  EXPECT_EQ(LoadTopState(top, "/nonexistent/top.json", kNow).error().code(), ErrorCode::kNotFound);
  const std::string path = testing::UniqueTempPath("strange.json");
  std::ofstream(path) << "{\"version\": 7}";
  Status s = LoadTopState(top, path, kNow);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message().find(path), std::string::npos) << s.error().message();
  std::ofstream(path) << "not json";
  s = LoadTopState(top, path, kNow);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("delete it"), std::string::npos) << s.error().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hourglass
