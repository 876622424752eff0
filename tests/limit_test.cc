// Limit specs: "N/DUR" parses to a sliding-window limit; garbage gets a message naming the part.
#include "hourglass/limit.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace hourglass {
namespace {

TEST(ParseLimit, ParsesTheSpecsOfTheIssue) {
  EXPECT_EQ(*ParseLimit("5/m"), (Limit{*Window::Sliding(Seconds{60}), 5}));
  EXPECT_EQ(*ParseLimit("100/d"), (Limit{*Window::Sliding(Seconds{86400}), 100}));
  EXPECT_EQ(*ParseLimit("20/10m"), (Limit{*Window::Sliding(Seconds{600}), 20}));
  EXPECT_EQ(*ParseLimit("2/s"), (Limit{*Window::Sliding(Seconds{1}), 2}));
  EXPECT_EQ(*ParseLimit("7/90"), (Limit{*Window::Sliding(Seconds{90}), 7}));
  EXPECT_EQ(ParseLimit("0/h")->max_hits, 0u);  // a ban
  EXPECT_EQ(ParseLimit("20/10m")->ToString(), "20/10m");
  for (const char* spec : {"5/m", "2/s", "100/d", "7/90s", "3/2h", "1/w"}) {
    EXPECT_EQ(ParseLimit(spec)->ToString(), spec);
    EXPECT_EQ(*ParseLimit(ParseLimit(spec)->ToString()), *ParseLimit(spec));
  }
  EXPECT_EQ((Limit{*Window::Fixed(Seconds{3600}), 3}).ToString(), "3/fixed 1h");
}

TEST(ParseLimit, RejectsGarbageNamingTheBadPart) {
  struct Case {
    const char* spec;
    const char* names;
  };
  for (const Case& c :
       {Case{"5", "missing \"/\""}, Case{"/m", "bad count \"\""}, Case{"x/m", "bad count \"x\""},
        Case{"-1/m", "bad count \"-1\""}, Case{"5/", "empty duration"},
        Case{"5/x", "unknown unit \"x\""}, Case{"5/0s", "must be positive"},
        Case{"5/m/h", "unknown unit"}, Case{"1234567890123456789/m", "bad count"}}) {
    Result<Limit> limit = ParseLimit(c.spec);
    ASSERT_FALSE(limit.ok()) << c.spec;
    EXPECT_EQ(limit.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(limit.error().message().find(c.names), std::string::npos)
        << c.spec << " -> " << limit.error().message();
    EXPECT_NE(limit.error().message().find(c.spec), std::string::npos) << "quotes the spec";
  }
}

TEST(ParseLimits, ParsesAListAndStopsAtTheFirstBadOne) {
  Result<std::vector<Limit>> limits = ParseLimits("2/s, 5/m, 10/h, 100/d");
  ASSERT_TRUE(limits.ok());
  ASSERT_EQ(limits->size(), 4u);
  EXPECT_EQ((*limits)[3].window.length(), Seconds{86400});
  EXPECT_EQ(ParseLimits("2/s,5/q").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(ParseLimits("2/s,5/q").error().message().find("5/q"), std::string::npos);
  EXPECT_FALSE(ParseLimits(" , ").ok());
}

// The spellings users of Python `limits` type mean what they say there.
TEST(ParseLimits, AcceptsThePythonLimitsSpellings) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"5/minute", "5/m"},
      {"5 per minute", "5/m"},
      {"10/hour, 100/day", "10/h 100/d"},
      {"10 per 2 hours", "10/2h"},
      {"3 PER 90 seconds", "3/90s"},
      {"2/second 7/weeks", "2/s 7/w"},
      {"5 / min", "5/m"},
      {"2/s, 5/m, 10/h, 100/d", "2/s 5/m 10/h 100/d"},
  };
  for (const auto& [spec, expected] : cases) {
    Result<std::vector<Limit>> limits = ParseLimits(spec);
    ASSERT_TRUE(limits.ok()) << spec << ": " << limits.error().message();
    std::string got;
    for (const Limit& l : *limits) got += (got.empty() ? "" : " ") + l.ToString();
    EXPECT_EQ(got, expected) << spec;
  }
  ASSERT_TRUE(ParseLimit("5 per minute").ok());
  EXPECT_EQ(ParseLimit("5 per minute")->ToString(), "5/m");
  Result<std::vector<Limit>> month = ParseLimits("100/month");
  ASSERT_FALSE(month.ok());
  EXPECT_NE(month.error().message().find("write 30d or 365d"), std::string::npos)
      << month.error().message();
  EXPECT_FALSE(ParseLimits("5 per fortnight").ok());
  EXPECT_FALSE(ParseLimits("per minute").ok());
}

// Every kind of window written as a spec, as Limit::ToString writes it, and read back: what a
// request carrying its own limits can say ({"limits": ["10000/calendar month Europe/Berlin"]}).
TEST(ParseLimit, ReadsBackFixedAndCalendarWindowsAsToStringWritesThem) {
  const TimeZone berlin = *TimeZone::Named("Europe/Berlin");
  const std::vector<Limit> limits = {
      Limit{*Window::Fixed(Seconds{3600}), 3},
      Limit{*Window::Calendar(CalendarUnit::kMonth), 10000},
      Limit{*Window::Calendar(CalendarUnit::kDay, Seconds{2 * 3600}), 20},
      Limit{*Window::Calendar(CalendarUnit::kWeek, Seconds{-5 * 3600 - 1800}), 7},
      Limit{Window::Calendar(CalendarUnit::kMonth, berlin), 10000},
      Limit{
          Window::Calendar(CalendarUnit::kYear, *TimeZone::Named("America/Argentina/Buenos_Aires")),
          9},
  };
  std::string all;
  for (const Limit& limit : limits) {
    Result<Limit> back = ParseLimit(limit.ToString());
    ASSERT_TRUE(back.ok()) << limit.ToString() << ": " << back.error().message();
    EXPECT_EQ(*back, limit) << limit.ToString();
    all += limit.ToString() + ", 5/m ";
  }
  EXPECT_EQ(*ParseLimit("10000 per calendar month Europe/Berlin"), limits[4]);
  Result<std::vector<Limit>> unknown = ParseLimits("5/calendar month Mars/Olympus, 5/m");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("unknown time zone"), std::string::npos)
      << unknown.error().message();
  Result<std::vector<Limit>> list = ParseLimits(all);
  ASSERT_TRUE(list.ok()) << all << ": " << list.error().message();
  ASSERT_EQ(list->size(), 2 * limits.size());
  for (size_t i = 0; i < limits.size(); ++i) {
    EXPECT_EQ((*list)[2 * i], limits[i]) << all;
    EXPECT_EQ((*list)[2 * i + 1], *ParseLimit("5/m"));
  }
  for (const auto& [spec, says] : std::vector<std::pair<std::string, std::string>>{
           {"5/calendar fortnight", "hour, day, week, month or year"},
           {"5/calendar month Mars/Olympus", "unknown time zone \"Mars/Olympus\""},
           {"5/calendar day+2", "neither +HH:MM"},
           {"5/calendar day+19:00", "limit \"5/calendar day+19:00\""},
           {"5/fixed soon", "limit \"5/fixed soon\""}}) {
    Result<Limit> bad = ParseLimit(spec);
    ASSERT_FALSE(bad.ok()) << spec;
    EXPECT_NE(bad.error().message().find(says), std::string::npos) << bad.error().message();
  }
}

TEST(Modes, HaveStableNames) {
  EXPECT_EQ(CountingModeName(CountingMode::kAdmitted), "admitted");
  EXPECT_EQ(CountingModeName(CountingMode::kAttempts), "attempts");
  EXPECT_EQ(FailureModeName(FailureMode::kFailOpen), "open");
  EXPECT_EQ(FailureModeName(FailureMode::kFailClosed), "closed");
}

}  // namespace
}  // namespace hourglass
