#include "hourglass/window.h"

#include <fmt/format.h>

#include <cctype>
#include <chrono>

#include "hourglass/ladder.h"

namespace hourglass {
namespace {

constexpr int64_t kMinute = 60;
constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;
constexpr int64_t kWeek = 7 * kDay;
constexpr int64_t kMaxDuration = 3660 * kDay;  // ten years: far beyond any useful window

std::string Lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// A unit word in lower case, as Python `limits` and people write it: "minute", "minutes", "min",
// "hour", "hr"...
int64_t UnitWordSeconds(std::string_view word) {
  if (word.size() > 1 && word.back() == 's') word.remove_suffix(1);  // plural
  if (word == "sec" || word == "second") return 1;
  if (word == "min" || word == "minute") return kMinute;
  if (word == "hr" || word == "hour") return kHour;
  if (word == "day") return kDay;
  if (word == "week") return kWeek;
  return 0;
}

int64_t UnitSeconds(char unit) {
  switch (unit) {
    case 's':
      return 1;
    case 'm':
      return kMinute;
    case 'h':
      return kHour;
    case 'd':
      return kDay;
    case 'w':
      return kWeek;
    default:
      return 0;
  }
}

// The unit's nominal length on the wall clock: what it lasts where the clock is never set.
int64_t NominalLength(CalendarUnit unit) {
  switch (unit) {
    case CalendarUnit::kHour:
      return kHour;
    case CalendarUnit::kDay:
      return kDay;
    case CalendarUnit::kWeek:
      return kWeek;
    case CalendarUnit::kMonth:
      return 31 * kDay;
    case CalendarUnit::kYear:
      return 366 * kDay;
  }
  return kDay;
}

using std::chrono::sys_days;

std::chrono::year_month_day DateOf(int64_t local) {
  return std::chrono::year_month_day{sys_days{std::chrono::days{FloorDiv(local, kDay)}}};
}

int64_t SecondsOf(sys_days day) { return day.time_since_epoch().count() * kDay; }

// The wall-clock start of the unit holding wall-clock second `local`.
int64_t LocalUnitStart(CalendarUnit unit, int64_t local) {
  const int64_t day = FloorDiv(local, kDay) * kDay;
  switch (unit) {
    case CalendarUnit::kHour:
      return FloorDiv(local, kHour) * kHour;
    case CalendarUnit::kDay:
      return day;
    case CalendarUnit::kWeek:  // 1970-01-01 was a Thursday: Monday is 3 days before
      return day - ((FloorDiv(day, kDay) + 3) % 7 + 7) % 7 * kDay;
    case CalendarUnit::kMonth: {
      const std::chrono::year_month_day ymd = DateOf(local);
      return SecondsOf(sys_days{ymd.year() / ymd.month() / std::chrono::day{1}});
    }
    case CalendarUnit::kYear:
      return SecondsOf(sys_days{DateOf(local).year() / std::chrono::January / 1});
  }
  return day;
}

// The wall-clock start of the unit after the one starting at wall-clock second `start`.
int64_t LocalUnitAfter(CalendarUnit unit, int64_t start) {
  switch (unit) {
    case CalendarUnit::kHour:
    case CalendarUnit::kDay:
    case CalendarUnit::kWeek:
      return start + NominalLength(unit);
    case CalendarUnit::kMonth: {
      const std::chrono::year_month_day ymd = DateOf(start);
      return SecondsOf(
          sys_days{(ymd.year() / ymd.month() + std::chrono::months{1}) / std::chrono::day{1}});
    }
    case CalendarUnit::kYear:
      return SecondsOf(
          sys_days{(DateOf(start).year() + std::chrono::years{1}) / std::chrono::January / 1});
  }
  return start + kDay;
}

}  // namespace

Result<Seconds> ParseDuration(std::string_view text) {
  const std::string_view kHint = "use a count and a unit s, m, h, d or w (e.g. 90s, 10m, 1d)";
  if (text.empty()) return InvalidArgument(fmt::format("empty duration; {}", kHint));
  size_t digits = 0;
  int64_t count = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    count = count * 10 + (text[digits] - '0');
    if (count > kMaxDuration) {
      return InvalidArgument(fmt::format("duration \"{}\" is too long (at most 3660d)", text));
    }
    ++digits;
  }
  std::string_view unit = text.substr(digits);
  if (digits == 0) count = 1;  // "m" means one minute
  int64_t unit_seconds = 1;
  if (!unit.empty()) {
    const std::string lower = Lowercase(unit);
    unit_seconds = unit.size() == 1 ? UnitSeconds(unit[0]) : UnitWordSeconds(lower);
    if (unit_seconds == 0 && (lower.starts_with("month") || lower.starts_with("year"))) {
      return InvalidArgument(fmt::format(
          "duration \"{}\": months and years are not sliding windows of one length; write 30d "
          "or 365d (with a --retention that long), or a calendar limit in a policy file",
          text));
    }
    if (unit_seconds == 0) {
      return InvalidArgument(
          fmt::format("duration \"{}\": unknown unit \"{}\"; {}", text, unit, kHint));
    }
  } else if (digits == 0) {
    return InvalidArgument(fmt::format("duration \"{}\": {}", text, kHint));
  }
  if (count == 0) return InvalidArgument(fmt::format("duration \"{}\" must be positive", text));
  if (count > kMaxDuration / unit_seconds) {
    return InvalidArgument(fmt::format("duration \"{}\" is too long (at most 3660d)", text));
  }
  return Seconds{count * unit_seconds};
}

Result<std::vector<Window>> ParseSlidingWindows(std::span<const std::string> specs) {
  std::vector<Window> windows;
  for (const std::string& spec : specs) {
    Result<Seconds> length = ParseDuration(spec);
    Result<Window> window = length.ok() ? Window::Sliding(*length) : Result<Window>(length.error());
    if (!window.ok()) {
      return InvalidArgument(fmt::format("window \"{}\": {}", spec, window.error().message()));
    }
    windows.push_back(*window);
  }
  return windows;
}

std::string FormatDuration(Seconds d) {
  // Built by hand: an answer formats each of its limits, and a short result allocates nothing.
  const int64_t s = d.count();
  for (auto [unit, size] : {std::pair{'w', kWeek}, {'d', kDay}, {'h', kHour}, {'m', kMinute}}) {
    if (s != 0 && s % size == 0) return std::to_string(s / size) + unit;
  }
  return std::to_string(s) + 's';
}

Result<Window> Window::Sliding(Seconds length) {
  if (length < Seconds{1}) return InvalidArgument("a sliding window must be at least 1s long");
  return Window(WindowKind::kSliding, length, CalendarUnit::kDay, TimeZone{});
}

Result<Window> Window::Fixed(Seconds length) {
  if (length < Seconds{1}) return InvalidArgument("a fixed window must be at least 1s long");
  return Window(WindowKind::kFixed, length, CalendarUnit::kDay, TimeZone{});
}

Result<Window> Window::Calendar(CalendarUnit unit, Seconds utc_offset) {
  Result<TimeZone> zone = TimeZone::Fixed(utc_offset);
  if (!zone.ok()) return zone.error();
  return Calendar(unit, *zone);
}

Window Window::Calendar(CalendarUnit unit, const TimeZone& zone) {
  // An hour the clock repeats is two windows of an hour; longer units last longer by the set-back.
  const int64_t longer = unit == CalendarUnit::kHour ? 0 : zone.LongestSetBack().count();
  return Window(WindowKind::kCalendar, Seconds{NominalLength(unit) + longer}, unit, zone);
}

Seconds Window::length() const { return length_; }

int64_t Window::StartOf(int64_t t) const {
  switch (kind_) {
    case WindowKind::kSliding:
      return t - length_.count() + 1;
    case WindowKind::kFixed:
      return FloorDiv(t, length_.count()) * length_.count();
    case WindowKind::kCalendar:
      break;
  }
  const TimeZone::Period period = zone_.PeriodAt(t);
  const int64_t local_start = LocalUnitStart(unit_, t + period.offset.count());
  // An hour is one offset's: a repeated wall-clock hour is two windows, and an hour the offset
  // changed in (by half an hour, say) starts again where it changed.
  if (unit_ == CalendarUnit::kHour) {
    return std::max(local_start - period.offset.count(), period.begin);
  }
  return zone_.FirstAtOrAfter(local_start);
}

Span Window::SpanAt(Instant t) const { return Span{StartOf(ToUnix(t)), ToUnix(t)}; }

std::optional<Instant> Window::NextStart(Instant t) const {
  if (kind_ == WindowKind::kSliding) return std::nullopt;
  if (kind_ == WindowKind::kFixed) return FromUnix(StartOf(ToUnix(t)) + length_.count());
  const TimeZone::Period period = zone_.PeriodAt(ToUnix(t));
  const int64_t local_start = LocalUnitStart(unit_, ToUnix(t) + period.offset.count());
  const int64_t local_next = LocalUnitAfter(unit_, local_start);
  if (unit_ == CalendarUnit::kHour) {
    return FromUnix(std::min(local_next - period.offset.count(), period.end));
  }
  return FromUnix(zone_.FirstAtOrAfter(local_next));
}

namespace {

constexpr std::pair<CalendarUnit, std::string_view> kUnitNames[] = {
    {CalendarUnit::kHour, "hour"},   {CalendarUnit::kDay, "day"},   {CalendarUnit::kWeek, "week"},
    {CalendarUnit::kMonth, "month"}, {CalendarUnit::kYear, "year"},
};

}  // namespace

std::string_view CalendarUnitName(CalendarUnit unit) {
  for (const auto& [u, name] : kUnitNames) {
    if (u == unit) return name;
  }
  return "?";
}

std::optional<CalendarUnit> ParseCalendarUnit(std::string_view name) {
  for (const auto& [u, n] : kUnitNames) {
    if (n == name) return u;
  }
  return std::nullopt;
}

std::optional<Seconds> ParseUtcOffset(std::string_view text) {
  if (text.size() != 6 || (text[0] != '+' && text[0] != '-') || text[3] != ':') return std::nullopt;
  for (size_t i : {1, 2, 4, 5}) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  }
  const int64_t minutes =
      ((text[1] - '0') * 10 + (text[2] - '0')) * 60 + (text[4] - '0') * 10 + (text[5] - '0');
  return Seconds{(text[0] == '-' ? -60 : 60) * minutes};
}

std::string Window::ToString() const {
  switch (kind_) {
    case WindowKind::kSliding:
      return FormatDuration(length_);
    case WindowKind::kFixed:
      return "fixed " + FormatDuration(length_);
    case WindowKind::kCalendar:
      break;
  }
  if (zone_.named()) return fmt::format("calendar {} {}", CalendarUnitName(unit_), zone_.name());
  return fmt::format("calendar {}{}", CalendarUnitName(unit_), zone_.name());
}

}  // namespace hourglass
