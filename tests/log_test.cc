// The service's log lines: UTC timestamps to the millisecond, levels, text or one JSON object a
// line whatever bytes the message holds.
#include "hourglass/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace hourglass {
namespace {

// "2026-11-25T00:22:45.123Z": digits where the pattern has 9, the rest as written.
bool IsUtcTimestamp(std::string_view text) {
  constexpr std::string_view kPattern = "9999-99-99T99:99:99.999Z";
  if (text.size() != kPattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (kPattern[i] == '9' ? !digit : text[i] != kPattern[i]) return false;
  }
  return true;
}

struct Captured {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> log;
  explicit Captured(LogOptions options)
      : log(MakeLogger(options, std::make_shared<spdlog::sinks::ostream_sink_mt>(out))) {}
};

TEST(Log, TextLinesCarryAUtcTimestampAndTheLevel) {
  Captured c({.level = spdlog::level::info, .format = LogFormat::kText});
  c.log->warn("memcached {} unreachable", "127.0.0.1:11211");
  const std::string line = c.out.str();
  const size_t space = line.find(' ');
  EXPECT_TRUE(IsUtcTimestamp(line.substr(0, space))) << line;
  EXPECT_EQ(line.substr(space), " warning memcached 127.0.0.1:11211 unreachable\n");
}

// A message quoting a feature or a broken file's bytes stays one line and writes no escape
// sequence to a terminal tailing the log: such bytes are spelled out.
TEST(Log, TextLinesSpellOutBytesThatWouldSplitOrRecolourThem) {
  Captured c({.level = spdlog::level::info, .format = LogFormat::kText});
  c.log->warn("policy file: bad line \"{}\"", "x\r\nInjected: 1 \x1b[31mred\xff");
  const std::string line = c.out.str();
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_NE(line.find(" warning policy file: bad line \"x\\r\\nInjected: 1 \\x1b[31mred\\xff\"\n"),
            std::string::npos)
      << line;
}

TEST(Log, LinesBelowTheLevelAreDropped) {
  Captured c({.level = spdlog::level::warn, .format = LogFormat::kText});
  c.log->info("started");
  c.log->debug("details");
  c.log->error("failed");
  EXPECT_EQ(c.out.str().find("started"), std::string::npos) << c.out.str();
  EXPECT_EQ(c.out.str().find("details"), std::string::npos) << c.out.str();
  EXPECT_NE(c.out.str().find(" error failed"), std::string::npos) << c.out.str();
}

TEST(Log, JsonLinesAreOneObjectEachWhateverTheMessageHolds) {
  Captured c({.level = spdlog::level::info, .format = LogFormat::kJson});
  const std::string hostile = "a\"b\\c\nd\x01\xff";
  c.log->info("feature {}", hostile);
  c.log->error("second");
  std::istringstream lines(c.out.str());
  std::string first, second, third;
  ASSERT_TRUE(std::getline(lines, first));
  ASSERT_TRUE(std::getline(lines, second));
  EXPECT_FALSE(std::getline(lines, third)) << "the message's newline split the line";
  const nlohmann::json a = nlohmann::json::parse(first);
  EXPECT_EQ(a["level"], "info");
  // The invalid UTF-8 byte is replaced; everything else arrives as sent.
  EXPECT_EQ(a["message"].get<std::string>().substr(0, 15), "feature a\"b\\c\nd");
  EXPECT_TRUE(IsUtcTimestamp(a["time"].get<std::string>())) << a["time"];
  EXPECT_EQ(nlohmann::json::parse(second)["level"], "error");
}

TEST(Log, LevelsAndFormatsAreParsedByName) {
  EXPECT_EQ(*ParseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(*ParseLogLevel("warning"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("off"), spdlog::level::off);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  const Result<spdlog::level::level_enum> bad = ParseLogLevel("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("\"loud\": use debug, info, warning, error or off"),
            std::string::npos)
      << bad.error().message();
  EXPECT_FALSE(ParseLogFormat("xml").ok());
}

}  // namespace
}  // namespace hourglass
