// Audit lines: every field and window kind survives the round trip, any bytes of event and
// feature come back as they were, and a bad line is refused naming what is wrong.
#include "hourglass/audit_record.h"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

AuditRecord Sample(std::string feature) {
  AuditRecord r;
  r.at = 1'795'762'433;
  r.done = r.at + 2;  // answered 2 s later
  r.event = "signup";
  r.feature = std::move(feature);
  r.hits = 3;
  r.mode = CountingMode::kAttempts;
  r.allowed = true;
  r.request_allowed = false;
  r.binding = false;
  r.recorded = true;
  r.blocked = true;
  r.peek = false;
  r.limits = {
      AuditLimit{Limit{*Window::Sliding(Seconds{60}), 5}, true, 4, 2, false},
      AuditLimit{Limit{*Window::Fixed(Seconds{86400}), 100}},
      AuditLimit{Limit{*Window::Calendar(CalendarUnit::kDay, Seconds{-5400}), 7}, true, 1, 1},
      AuditLimit{
          Limit{Window::Calendar(CalendarUnit::kMonth, *TimeZone::Named("Europe/Berlin")), 10000},
          true, 9, 9},
  };
  return r;
}

TEST(AuditRecord, EveryFieldAndWindowComesBack) {
  const AuditRecord r = Sample("ann@example.com");
  const std::string line = AuditLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  Result<AuditRecord> back = ParseAuditLine(line);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, r);
  EXPECT_NE(line.find(R"("time_zone":"Europe/Berlin")"), std::string::npos) << line;
  AuditRecord at_once = r;  // answered within its second: no done, read back as its at
  at_once.done = at_once.at;
  EXPECT_EQ(AuditLine(at_once).find("done"), std::string::npos);
  EXPECT_EQ(*ParseAuditLine(AuditLine(at_once)), at_once);
}

TEST(AuditRecord, AnyBytesOfAFeatureComeBackAsTheyWere) {
  for (const std::string& feature :
       {std::string("caf\xc3\xa9"), std::string("\xff\xfe{}", 4), std::string("a\0b\r\n", 5),
        std::string("{}{:x}"), std::string(), std::string(70000, 'z')}) {
    AuditRecord r = Sample(feature);
    r.event = std::string("ev\x80", 3);
    Result<AuditRecord> back = ParseAuditLine(AuditLine(r));
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back->feature, feature);
    EXPECT_EQ(back->event, r.event);
  }
}

TEST(AuditRecord, ABadLineIsRefusedNamingWhatIsWrong) {
  const std::string good = AuditLine(Sample("x"));
  const auto error = [](const std::string& line) {
    Result<AuditRecord> r = ParseAuditLine(line);
    EXPECT_FALSE(r.ok()) << line;
    return r.ok() ? std::string() : r.error().message();
  };
  EXPECT_NE(error("not json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error("[1]").find("not a JSON object"), std::string::npos);
  std::string no_at = good;
  no_at.replace(no_at.find("\"at\""), 4, "\"xx\"");
  EXPECT_NE(error(no_at).find("no at"), std::string::npos);
  std::string bad_zone = good;
  bad_zone.replace(bad_zone.find("Europe/Berlin"), 13, "Europe/Nowhere");
  EXPECT_NE(error(bad_zone).find("unknown time zone"), std::string::npos);
  std::string bad_hex = good;
  bad_hex.replace(bad_hex.find("\"feature\":\"x\""), 13, "\"feature_hex\":\"zz\"");
  EXPECT_NE(error(bad_hex).find("feature_hex"), std::string::npos);
  std::string early = good;
  early.replace(early.find("\"done\":1795762435"), 17, "\"done\":1795762432");
  EXPECT_NE(error(early).find("done is before at"), std::string::npos);
  std::string bad_mode = good;
  bad_mode.replace(bad_mode.find("attempts"), 8, "sometime");
  EXPECT_NE(error(bad_mode).find("mode"), std::string::npos);
}

}  // namespace
}  // namespace hourglass
