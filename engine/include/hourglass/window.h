// Windows: which seconds a count covers, evaluated at an instant T (docs/design.md).
//
// - sliding W: the hits with T-W < t <= T (the ground truth a sorted log answers);
// - fixed W:   the hits in [floor(T/W)*W, T], windows aligned to the Unix epoch;
// - calendar:  the hits since the start of the current hour, day, week (from Monday), month or
//               year as the wall clock of a time zone reads it (a fixed UTC offset, or an IANA
//               zone whose offset changes with daylight saving time).
//
//   Result<Window> w = Window::Sliding(std::chrono::minutes{10});
//   Span s = w->SpanAt(now);  // [now - 599, now]
//
// Thread-safety: immutable value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/status.h"
#include "hourglass/time_zone.h"

namespace hourglass {

// Unix seconds [first, last], both inclusive; empty when first > last.
struct Span {
  int64_t first = 0;
  int64_t last = -1;
  int64_t length() const { return last >= first ? last - first + 1 : 0; }
  bool Contains(int64_t t) const { return first <= t && t <= last; }
  bool operator==(const Span&) const = default;
};

// Hits counted in a span of seconds: a piece of a window's cover (see planner.h).
struct CountedSpan {
  Span span;
  uint64_t hits = 0;
};

enum class WindowKind { kSliding, kFixed, kCalendar };
enum class CalendarUnit { kHour, kDay, kMonth, kWeek, kYear };

class Window {
 public:
  // A window of `length` seconds ending at T. length >= 1s.
  static Result<Window> Sliding(Seconds length);
  // Epoch-aligned windows of `length`. length >= 1s.
  static Result<Window> Fixed(Seconds length);
  // Since the start of the current hour/day/week/month/year at `utc_offset` (within +-18h, whole
  // minutes).
  static Result<Window> Calendar(CalendarUnit unit, Seconds utc_offset = Seconds{0});
  // The same on the wall clock of `zone`. A window starts where the clock first reads the start
  // of its unit (in a skipped hour, where the clock resumes); an hour the clock repeats is two
  // windows (each occurrence of its wall-clock hour), a day, week, month or year is one, longer
  // by what the clock went back.
  static Window Calendar(CalendarUnit unit, const TimeZone& zone);

  WindowKind kind() const { return kind_; }
  CalendarUnit unit() const { return unit_; }
  // Calendar windows in a fixed offset: the offset; otherwise 0.
  Seconds utc_offset() const { return zone_.fixed_offset(); }
  const TimeZone& time_zone() const { return zone_; }
  // Sliding and fixed: the window's length. Calendar: the longest span it can have (an hour, a
  // day, 7 days, 31 days, 366 days, and in a named zone as much more as its clock was ever set
  // back at once from 2000 to 2100): what the store must retain to answer it.
  Seconds length() const;
  // The seconds the window covers when evaluated at `t`.
  Span SpanAt(Instant t) const;
  // Fixed and calendar: the first second of the next window after `t`. Sliding: nullopt.
  std::optional<Instant> NextStart(Instant t) const;
  // "1m", "fixed 1h", "calendar day+02:00", "calendar month Europe/Berlin"
  std::string ToString() const;

  bool operator==(const Window&) const = default;

 private:
  Window(WindowKind kind, Seconds length, CalendarUnit unit, TimeZone zone)
      : kind_(kind), length_(length), unit_(unit), zone_(zone) {}
  int64_t StartOf(int64_t t) const;

  WindowKind kind_;
  Seconds length_;
  CalendarUnit unit_;
  TimeZone zone_;
};

// "hour", "day", "week", "month", "year": a calendar unit's name, and back (nullopt for any other
// text). The one spelling of policy files, limit specs and audit lines.
std::string_view CalendarUnitName(CalendarUnit unit);
std::optional<CalendarUnit> ParseCalendarUnit(std::string_view name);
// "+HH:MM" or "-HH:MM" as seconds; nullopt for any other text (the range is Window::Calendar's to
// check).
std::optional<Seconds> ParseUtcOffset(std::string_view text);

// "1d", "10m", "90s", "1h30m" is not accepted: a count and one unit (s, m, h, d, w, or a word:
// second, minute, hour, day, week, plural too, sec, min, hr), or plain seconds ("3600"); the
// count may be left out ("minute" is 1m). Errors name the bad part.
Result<Seconds> ParseDuration(std::string_view text);
// Sliding windows from duration specs ("1m", "1d"); an error names the bad spec:
// window "5q": <why>.
Result<std::vector<Window>> ParseSlidingWindows(std::span<const std::string> specs);
// The shortest exact form: 86400 -> "1d", 600 -> "10m", 90 -> "90s", 1 -> "1s".
std::string FormatDuration(Seconds d);

}  // namespace hourglass
