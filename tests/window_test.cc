// Windows and durations: spans at an instant, next starts, and duration parsing.
#include "hourglass/window.h"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

TEST(ParseDuration, AcceptsCountAndUnitOrPlainSeconds) {
  EXPECT_EQ(*ParseDuration("1s"), Seconds{1});
  EXPECT_EQ(*ParseDuration("s"), Seconds{1});
  EXPECT_EQ(*ParseDuration("m"), Seconds{60});
  EXPECT_EQ(*ParseDuration("10m"), Seconds{600});
  EXPECT_EQ(*ParseDuration("90s"), Seconds{90});
  EXPECT_EQ(*ParseDuration("1h"), Seconds{3600});
  EXPECT_EQ(*ParseDuration("1d"), Seconds{86400});
  EXPECT_EQ(*ParseDuration("2w"), Seconds{14 * 86400});
  EXPECT_EQ(*ParseDuration("3600"), Seconds{3600});
}

TEST(ParseSlidingWindows, ParsesEachSpecAndNamesTheBadOne) {
  const std::vector<std::string> good = {"1s", "10m", "1d"};
  Result<std::vector<Window>> windows = ParseSlidingWindows(good);
  ASSERT_TRUE(windows.ok());
  ASSERT_EQ(windows->size(), 3u);
  EXPECT_EQ((*windows)[1], *Window::Sliding(Seconds{600}));
  const std::vector<std::string> bad = {"1m", "5q"};
  Result<std::vector<Window>> refused = ParseSlidingWindows(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message().rfind("window \"5q\": ", 0), 0u) << refused.error().message();
}

TEST(ParseDuration, RejectsGarbageNamingTheBadPart) {
  for (const char* bad : {"", "0", "0m", "-5m", "1.5h", "10x", "m10", "1 m", "1mm", "h1",
                          "99999999999999999999", "4000d"}) {
    Result<Seconds> d = ParseDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseDuration("10x").error().message().find("unknown unit \"x\""), std::string::npos);
}

TEST(FormatDuration, ShortestExactForm) {
  EXPECT_EQ(FormatDuration(Seconds{1}), "1s");
  EXPECT_EQ(FormatDuration(Seconds{60}), "1m");
  EXPECT_EQ(FormatDuration(Seconds{600}), "10m");
  EXPECT_EQ(FormatDuration(Seconds{90}), "90s");
  EXPECT_EQ(FormatDuration(Seconds{86400}), "1d");
  EXPECT_EQ(FormatDuration(Seconds{2 * 86400}), "2d");
  for (int64_t s : {1, 59, 61, 3600, 7200, 86399, 604800}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(Seconds{s})), Seconds{s});
  }
}

TEST(Window, SlidingSpanEndsAtTAndHasItsLength) {
  const Window w = *Window::Sliding(Seconds{60});
  EXPECT_EQ(w.SpanAt(FromUnix(1000)), (Span{941, 1000}));
  EXPECT_FALSE(w.NextStart(FromUnix(1000)).has_value());
  EXPECT_EQ(w.ToString(), "1m");
}

TEST(Window, FixedSpanIsEpochAligned) {
  const Window w = *Window::Fixed(Seconds{60});
  EXPECT_EQ(w.SpanAt(FromUnix(1000)), (Span{960, 1000}));
  EXPECT_EQ(w.SpanAt(FromUnix(960)), (Span{960, 960}));
  EXPECT_EQ(*w.NextStart(FromUnix(1000)), FromUnix(1020));
  EXPECT_EQ(w.ToString(), "fixed 1m");
}

TEST(Window, CalendarDayStartsAtLocalMidnight) {
  // 2015-05-17 10:05:03 UTC = 1431857103.
  const Window utc = *Window::Calendar(CalendarUnit::kDay);
  EXPECT_EQ(utc.SpanAt(FromUnix(1431857103)).first, 1431820800);  // 2015-05-17 00:00 UTC
  const Window plus2 = *Window::Calendar(CalendarUnit::kDay, Seconds{2 * 3600});
  EXPECT_EQ(plus2.SpanAt(FromUnix(1431857103)).first, 1431820800 - 7200);  // 00:00 at +02:00
  EXPECT_EQ(*plus2.NextStart(FromUnix(1431857103)), FromUnix(1431820800 - 7200 + 86400));
  // Local time is already the next day at 23:30 UTC in +02:00.
  EXPECT_EQ(plus2.SpanAt(FromUnix(1431905400)).first, 1431820800 + 86400 - 7200);
  EXPECT_EQ(plus2.ToString(), "calendar day+02:00");
  const Window minus = *Window::Calendar(CalendarUnit::kHour, Seconds{-5400});
  EXPECT_EQ(minus.ToString(), "calendar hour-01:30");
  EXPECT_EQ(minus.SpanAt(FromUnix(1431857103)).first, 1431855000);  // 10:30 UTC = 09:00-1:30
}

TEST(Window, CalendarMonthHandlesMonthLengths) {
  const Window month = *Window::Calendar(CalendarUnit::kMonth);
  // 2024-02-29 12:00 UTC = 1709208000; February 2024 started at 1706745600.
  EXPECT_EQ(month.SpanAt(FromUnix(1709208000)).first, 1706745600);
  EXPECT_EQ(*month.NextStart(FromUnix(1709208000)), FromUnix(1709251200));  // 2024-03-01
  EXPECT_EQ(month.length(), Seconds{31 * 86400});
}

TEST(Window, RejectsBadParameters) {
  EXPECT_EQ(Window::Sliding(Seconds{0}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Window::Fixed(Seconds{-1}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Window::Calendar(CalendarUnit::kDay, Seconds{30}).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Window::Calendar(CalendarUnit::kDay, Seconds{19 * 3600}).error().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace hourglass
