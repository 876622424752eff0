// CLI rendering: times, sparklines, and the JSON shapes scripts depend on.
#include "render.h"

#include <gtest/gtest.h>

namespace hourglass::cli {
namespace {

TEST(Render, TimesAreUtcIso8601) {
  EXPECT_EQ(FormatTime(FromUnix(1431857103)), "2015-05-17T10:05:03Z");
  EXPECT_EQ(FormatTimeOfDay(FromUnix(1431857103), true), "10:05:03");
  EXPECT_EQ(FormatTimeOfDay(FromUnix(1431857103), false), "10:05");
  // The ends of the accepted range (past 2262, nanosecond clocks overflow).
  EXPECT_EQ(FormatTime(kFirstInstant), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(kLastInstant), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatTimeOfDay(kLastInstant, true), "23:59:59");
}

TEST(Render, Iso8601TimesWithTheirOffsetParseBackToTheSameSecond) {
  const Instant t = FromUnix(1431857103);  // 2015-05-17T10:05:03Z
  EXPECT_EQ(ParseTime("2015-05-17T10:05:03Z"), t);
  EXPECT_EQ(ParseTime("2015-05-17 10:05:03z"), t);
  EXPECT_EQ(ParseTime("2015-05-17T12:05:03+02:00"), t);
  EXPECT_EQ(ParseTime("2015-05-17T05:35:03-0430"), t);
  EXPECT_EQ(ParseTime("2015-05-17T11:05:03+01"), t);
  EXPECT_EQ(ParseTime("2015-05-17T10:05:03.999Z"), t) << "a fraction is dropped";
  EXPECT_EQ(ParseTime("2015-05-17T10:05Z"), FromUnix(1431857100));
  EXPECT_EQ(ParseTime("2016-02-29T00:00:00Z"), FromUnix(1456704000));
  for (int64_t s : {int64_t{0}, int64_t{951782400}, int64_t{4102444799}, ToUnix(kLastInstant)}) {
    EXPECT_EQ(ParseTime(FormatTime(FromUnix(s))), FromUnix(s)) << FormatTime(FromUnix(s));
  }
  for (const char* bad : {"2015-05-17T10:05:03", "2015-05-17", "2015-02-30T00:00:00Z",
                          "2015-05-17T24:00:00Z", "2015-05-17T10:05:03+25:00", "17/05/2015",
                          "2015-05-17T10:05:03Zjunk", "2015-5-17T10:05:03Z", "", "1431857103"}) {
    EXPECT_FALSE(ParseTime(bad).has_value()) << bad;
  }
}

TEST(Render, SparklineScalesToTheLargestValue) {
  const std::vector<uint64_t> values = {0, 1, 4, 8};
  EXPECT_EQ(Sparkline(values), "·▁▄█");
  const std::vector<uint64_t> zeros = {0, 0};
  EXPECT_EQ(Sparkline(zeros), "··");
  const std::vector<uint64_t> big = {1, 1000000};
  EXPECT_EQ(Sparkline(big), "▁█");  // a non-zero value never looks like zero
}

TEST(Render, CountsWarnOfTodaysMissingHits) {
  Counts counts{FromUnix(1'431'857'103), {{*Window::Sliding(Seconds{86400}), 13}}, {}};
  EXPECT_EQ(CountsText(counts).find("missing"), std::string::npos);
  counts.missing = 10;
  const std::string text = CountsText(counts);
  EXPECT_NE(text.find("1d"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: 10 of today's hits are missing"), std::string::npos) << text;
  EXPECT_NE(text.find("evicted"), std::string::npos) << text;
}

}  // namespace
}  // namespace hourglass::cli
