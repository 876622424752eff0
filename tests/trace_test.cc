// Trace lines: the hits format keeps the feature verbatim; Apache lines give UTC times.
#include "trace.h"

#include <gtest/gtest.h>

#include <sstream>

namespace hourglass::cli {
namespace {

TEST(HitsLine, ParsesFieldsAndKeepsTheFeatureVerbatim) {
  Result<std::optional<TraceHit>> hit = ParseHitsLine("1431857103\tsignup\tAnn Smith <ann@x>\t3");
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->at, 1431857103);
  EXPECT_EQ((*hit)->event, "signup");
  EXPECT_EQ((*hit)->feature, "Ann Smith <ann@x>");
  EXPECT_EQ((*hit)->cost, 3u);
  hit = ParseHitsLine("5\te\tf\r\n");
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->feature, "f");
  EXPECT_EQ((*hit)->cost, 1u);
  hit = ParseHitsLine("5\te\t");  // an empty feature is a feature
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->feature, "");
}

TEST(HitsLine, SkipsBlankAndCommentLines) {
  EXPECT_FALSE(ParseHitsLine("")->has_value());
  EXPECT_FALSE(ParseHitsLine("# a comment")->has_value());
}

TEST(HitsLine, RejectsMalformedLinesSayingWhy) {
  struct Case {
    const char* line;
    const char* says;
  };
  for (const Case& c : {Case{"1431857103 signup ann", "separated by tabs"},
                        Case{"x\te\tf", "bad time \"x\""}, Case{"-5\te\tf", "bad time"},
                        Case{"5\t\tf", "empty event"}, Case{"5\te\tf\t0", "bad cost \"0\""},
                        Case{"5\te\tf\tx", "bad cost"}, Case{"5\te\tf\t1\textra", "more than 4"}}) {
    Result<std::optional<TraceHit>> hit = ParseHitsLine(c.line);
    ASSERT_FALSE(hit.ok()) << c.line;
    EXPECT_NE(hit.error().message().find(c.says), std::string::npos)
        << c.line << " -> " << hit.error().message();
  }
}

TEST(ApacheLine, ParsesClientAndUtcTime) {
  const char* line =
      "83.149.9.216 - - [17/May/2015:10:05:03 +0000] \"GET /presentations/ HTTP/1.1\" 200 203023 "
      "\"http://semicomplete.com/\" \"Mozilla/5.0\"";
  Result<std::optional<TraceHit>> hit = ParseApacheLine(line, "request");
  ASSERT_TRUE(hit.ok() && hit->has_value()) << (hit.ok() ? "" : hit.error().message());
  EXPECT_EQ((*hit)->at, 1431857103);
  EXPECT_EQ((*hit)->feature, "83.149.9.216");
  EXPECT_EQ((*hit)->event, "request");
  // Offsets are applied: 12:05:03 at +02:00 is 10:05:03 UTC.
  hit = ParseApacheLine("::1 - - [17/May/2015:12:05:03 +0200] \"GET / HTTP/1.1\" 200 1", "r");
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->at, 1431857103);
  EXPECT_EQ((*hit)->feature, "::1");
  hit = ParseApacheLine("h - - [17/May/2015:04:35:03 -0530] \"GET / HTTP/1.1\" 200 1", "r");
  EXPECT_EQ((*hit)->at, 1431857103);
}

TEST(ApacheLine, RejectsMalformedLines) {
  for (const char* line :
       {"no brackets here", "h - - [17/Mai/2015:10:05:03 +0000] x",
        "h - - [31/Feb/2015:10:05:03 +0000] x", "h - - [17/May/2015:25:05:03 +0000] x",
        "h - - [17/May/2015 10:05:03] x", " - - [17/May/2015:10:05:03 +0000] x"}) {
    Result<std::optional<TraceHit>> hit = ParseApacheLine(line, "r");
    EXPECT_FALSE(hit.ok()) << line;
  }
}

// Lines are read up to a bound, so a 200 MB line is an error found without holding it.
TEST(ReadBoundedLine, ReadsLinesAndRefusesOverlongOnesEarly) {
  std::istringstream in("a\tb\r\n\nlast without newline");
  std::string line;
  ASSERT_TRUE(*ReadBoundedLine(in, line));
  EXPECT_EQ(line, "a\tb\r");
  ASSERT_TRUE(*ReadBoundedLine(in, line));
  EXPECT_EQ(line, "");
  ASSERT_TRUE(*ReadBoundedLine(in, line));
  EXPECT_EQ(line, "last without newline");
  EXPECT_FALSE(*ReadBoundedLine(in, line));

  std::istringstream huge(std::string(kMaxTraceLine + 1, 'x') + "\nnext\n");
  Result<bool> too_long = ReadBoundedLine(huge, line);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_LT(too_long.error().message().size(), 200u) << "never echoes the line";
  std::istringstream exact(std::string(kMaxTraceLine, 'x'));
  ASSERT_TRUE(*ReadBoundedLine(exact, line));
  EXPECT_EQ(line.size(), kMaxTraceLine);
}

TEST(ParseHitsLine, ErrorsQuoteAtMostAnExcerpt) {
  Result<std::optional<TraceHit>> hit = ParseHitsLine(std::string(5000, '9') + "x\te\tf");
  ASSERT_FALSE(hit.ok());
  EXPECT_LT(hit.error().message().size(), 200u) << hit.error().message();
  EXPECT_NE(hit.error().message().find("5001 bytes"), std::string::npos);
}

}  // namespace
}  // namespace hourglass::cli
