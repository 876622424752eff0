// Time zones and the calendar windows counted in them, against an independent oracle: glibc's
// localtime_r reading the same tzdata through its own code. A calendar window is a maximal run of
// seconds whose wall clock shows the same hour (and offset), day, ISO week, month or year.
#include "hourglass/time_zone.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "hourglass/window.h"

namespace hourglass {
namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;

// Sets TZ for localtime_r for the test's life. The tests of this file run on one thread.
class LocalTime {
 public:
  explicit LocalTime(const std::string& zone) {
    const char* old = std::getenv("TZ");
    if (old != nullptr) saved_ = old;
    had_ = old != nullptr;
    setenv("TZ", (":" + zone).c_str(), 1);
    tzset();
  }
  ~LocalTime() {
    if (had_) {
      setenv("TZ", saved_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  std::tm At(int64_t t) const {
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    localtime_r(&tt, &tm);
    return tm;
  }

 private:
  std::string saved_;
  bool had_ = false;
};

// What the wall clock shows at `t` that a window of `unit` keeps the same.
std::tuple<int64_t, int64_t, int64_t> KeyOf(const LocalTime& clock, CalendarUnit unit, int64_t t) {
  const std::tm tm = clock.At(t);
  const int64_t local_day = (t + tm.tm_gmtoff - ((t + tm.tm_gmtoff) % kDay + kDay) % kDay) / kDay;
  switch (unit) {
    case CalendarUnit::kHour:
      return {local_day, tm.tm_hour, tm.tm_gmtoff};
    case CalendarUnit::kDay:
      return {local_day, 0, 0};
    case CalendarUnit::kWeek:
      return {local_day - (tm.tm_wday + 6) % 7, 0, 0};  // its Monday
    case CalendarUnit::kMonth:
      return {tm.tm_year, tm.tm_mon, 0};
    case CalendarUnit::kYear:
      return {tm.tm_year, 0, 0};
  }
  return {};
}

// The window at `t` is the run of equal keys around it: it starts where the key last changed and
// ends where it changes next.
void ExpectTheRunAround(const LocalTime& clock, const Window& w, int64_t t) {
  const CalendarUnit unit = w.unit();
  const int64_t start = w.SpanAt(FromUnix(t)).first;
  const int64_t next = ToUnix(*w.NextStart(FromUnix(t)));
  const auto key = KeyOf(clock, unit, t);
  ASSERT_LE(start, t) << w.ToString() << " at " << t;
  ASSERT_GT(next, t) << w.ToString() << " at " << t;
  ASSERT_EQ(KeyOf(clock, unit, start), key) << w.ToString() << " at " << t << ": start " << start;
  ASSERT_NE(KeyOf(clock, unit, start - 1), key) << w.ToString() << " at " << t << ": " << start;
  ASSERT_EQ(KeyOf(clock, unit, next - 1), key) << w.ToString() << " at " << t << ": next " << next;
  ASSERT_NE(KeyOf(clock, unit, next), key) << w.ToString() << " at " << t << ": next " << next;
  ASSERT_LE(next - start, w.length().count()) << w.ToString() << " at " << t;
}

TEST(TimeZone, AnUnknownOrHostileNameIsRefusedNamingTheFix) {
  Result<TimeZone> unknown = TimeZone::Named("Europe/Atlantis");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("\"Europe/Atlantis\""), std::string::npos);
  EXPECT_NE(unknown.error().message().find("Europe/Berlin"), std::string::npos);
  Result<TimeZone> hostile = TimeZone::Named("../../etc/passwd\x1b[2J");
  ASSERT_FALSE(hostile.ok());
  EXPECT_EQ(hostile.error().message().find('\x1b'), std::string::npos);
  EXPECT_EQ(hostile.error().message().find("passwd"), std::string::npos);
  EXPECT_FALSE(TimeZone::Named("").ok());
  EXPECT_FALSE(TimeZone::Fixed(Seconds{30}).ok());
}

TEST(TimeZone, BerlinFollowsDaylightSavingTime) {
  const TimeZone berlin = *TimeZone::Named("Europe/Berlin");
  EXPECT_TRUE(berlin.named());
  EXPECT_EQ(berlin.name(), "Europe/Berlin");
  // 2026-03-29 01:00 UTC: 02:00 CET becomes 03:00 CEST.
  const int64_t spring = 1'774'746'000;
  EXPECT_EQ(berlin.PeriodAt(spring - 1).offset, Seconds{kHour});
  EXPECT_EQ(berlin.PeriodAt(spring).offset, Seconds{2 * kHour});
  EXPECT_EQ(berlin.PeriodAt(spring).begin, spring);
  // 02:30 on that day never shows on the clock: the first second at or after it is 03:00 CEST.
  const int64_t local_0230 = spring + kHour + 1800;
  EXPECT_EQ(berlin.FirstAtOrAfter(local_0230), spring);
  // 2026-10-25 01:00 UTC: 03:00 CEST becomes 02:00 CET; 02:30 shows twice, first in CEST.
  const int64_t autumn = 1'792'890'000;
  EXPECT_EQ(berlin.FirstAtOrAfter(autumn + kHour + 1800), autumn - 1800);
  EXPECT_EQ(berlin.LongestSetBack(), Seconds{kHour});
  EXPECT_EQ(TimeZone::Named("Asia/Kolkata")->LongestSetBack(), Seconds{0});
  EXPECT_EQ(TimeZone::Named("Australia/Lord_Howe")->LongestSetBack(), Seconds{1800});
  EXPECT_EQ(TimeZone::Fixed(Seconds{-5 * kHour})->name(), "-05:00");
  EXPECT_EQ(TimeZone{}.name(), "+00:00");
}

TEST(CalendarWindowsInZones, DaysWeeksMonthsAndYearsStartAtLocalMidnight) {
  const TimeZone berlin = *TimeZone::Named("Europe/Berlin");
  // 2026-03-29 12:00 UTC (14:00 CEST): the day began at 00:00 CET, 23:00 UTC the day before, and
  // lasts 23 hours.
  const int64_t t = 1'774'785'600;
  const Window day = Window::Calendar(CalendarUnit::kDay, berlin);
  EXPECT_EQ(day.SpanAt(FromUnix(t)).first, 1'774'738'800);
  EXPECT_EQ(ToUnix(*day.NextStart(FromUnix(t))), 1'774'738'800 + 23 * kHour);
  EXPECT_EQ(day.length(), Seconds{25 * kHour});
  EXPECT_EQ(day.ToString(), "calendar day Europe/Berlin");
  // The month began on March 1 at 00:00 CET; April begins at 00:00 CEST.
  const Window month = Window::Calendar(CalendarUnit::kMonth, berlin);
  EXPECT_EQ(month.SpanAt(FromUnix(t)).first, 1'772'319'600);
  EXPECT_EQ(ToUnix(*month.NextStart(FromUnix(t))), 1'774'994'400);
  // The ISO week began on Monday, March 23.
  const Window week = Window::Calendar(CalendarUnit::kWeek, berlin);
  EXPECT_EQ(week.SpanAt(FromUnix(t)).first, 1'774'220'400);
  // The year began on January 1 at 00:00 CET.
  const Window year = Window::Calendar(CalendarUnit::kYear, berlin);
  EXPECT_EQ(year.SpanAt(FromUnix(t)).first, 1'767'222'000);
  EXPECT_EQ(*Window::Calendar(CalendarUnit::kYear),
            Window::Calendar(CalendarUnit::kYear, TimeZone{}));
  EXPECT_NE(year, *Window::Calendar(CalendarUnit::kYear, Seconds{kHour}));
}

TEST(CalendarWindowsInZones, ARepeatedHourIsTwoWindows) {
  const Window hour = Window::Calendar(CalendarUnit::kHour, *TimeZone::Named("Europe/Berlin"));
  const int64_t autumn = 1'792'890'000;  // 2026-10-25 01:00 UTC: 03:00 CEST becomes 02:00 CET
  EXPECT_EQ(hour.SpanAt(FromUnix(autumn - 60)).first, autumn - kHour);  // 02:59 CEST
  EXPECT_EQ(ToUnix(*hour.NextStart(FromUnix(autumn - 60))), autumn);
  EXPECT_EQ(hour.SpanAt(FromUnix(autumn + 60)).first, autumn);  // 02:01 CET
}

// Every unit in zones with daylight saving time, with none, with half-hour and 45-minute offsets
// and a half-hour shift, at random instants from 2000 to 2037 and around every change of offset
// from 2020 to 2030, against the runs glibc's clock shows. (The system's zone files list changes
// up to 2037; glibc extends them by the rule the files end with, the date library does not.)
TEST(CalendarWindowsInZones, EveryWindowIsTheRunOfOneWallClockUnit) {
  std::mt19937_64 rng(20261127);
  for (const char* name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                           "Asia/Kolkata", "Pacific/Chatham", "America/Sao_Paulo", "UTC"}) {
    const TimeZone zone = *TimeZone::Named(name);
    const LocalTime clock(name);
    std::vector<int64_t> instants;
    for (int i = 0; i < 300; ++i) {
      instants.push_back(946'684'800 + static_cast<int64_t>(rng() % (37 * 365 * kDay)));
    }
    for (int64_t t = 1'577'836'800; t < 1'893'456'000;) {  // 2020 to 2030
      const TimeZone::Period p = zone.PeriodAt(t);
      if (p.end >= 1'893'456'000) break;
      for (int64_t d : {-7200, -3601, -1801, -1, 0, 1, 1799, 3599, 3600, 7200}) {
        instants.push_back(p.end + d);
      }
      t = p.end;
    }
    for (CalendarUnit unit : {CalendarUnit::kHour, CalendarUnit::kDay, CalendarUnit::kWeek,
                              CalendarUnit::kMonth, CalendarUnit::kYear}) {
      const Window w = Window::Calendar(unit, zone);
      for (int64_t t : instants) {
        ExpectTheRunAround(clock, w, t);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace hourglass
