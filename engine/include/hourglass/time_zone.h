// Where calendar windows count their hours, days, weeks, months and years: a fixed UTC offset, or
// an IANA time zone ("Europe/Berlin") from the system's tz database (Debian's tzdata), whose
// offset follows the zone's rules at every instant, daylight saving time included.
//
//   Result<TimeZone> berlin = TimeZone::Named("Europe/Berlin");
//   TimeZone::Period p = berlin->PeriodAt(t);  // the offset at Unix second t, and for how long
//   int64_t first = berlin->FirstAtOrAfter(local);  // the first second whose wall clock reads
//                                                   // `local` (or later, in a skipped hour)
//
// Named zones follow the changes of offset the system's zone files list, which run to 2037: after
// that, a zone keeps the offset of its last listed change (the date library reads no rule past
// the list), so daylight saving time is not followed beyond 2037.
//
// Thread-safety: an immutable value. A named zone points into the process's tz database, which
// is loaded once and never changes while the process runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/status.h"

namespace date {
class time_zone;
}

namespace hourglass {

class TimeZone {
 public:
  // UTC: offset 0.
  TimeZone() = default;
  // Whole minutes within -18:00..+18:00.
  static Result<TimeZone> Fixed(Seconds utc_offset);
  // An IANA name as `timedatectl list-timezones` lists them; an unknown one is an error naming it.
  static Result<TimeZone> Named(std::string_view name);

  bool named() const { return zone_ != nullptr; }
  // Fixed zones: their offset. Named zones: 0.
  Seconds fixed_offset() const { return offset_; }
  // "Europe/Berlin", or the offset as "+HH:MM".
  std::string name() const;
  // Tells named zones apart within this process (0 for fixed ones), without formatting a name.
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(zone_); }

  // The offset in effect at Unix second `t`, and the seconds [begin, end) it is in effect for
  // (begin and end are the extremes of int64_t where it never changes).
  struct Period {
    Seconds offset{0};
    int64_t begin = 0;
    int64_t end = 0;
  };
  Period PeriodAt(int64_t t) const;
  // The first Unix second whose wall clock reads `local` (Unix seconds as the wall clock reads
  // them): the earlier of two when the clock went back over it, the end of the gap when the
  // clock skipped it.
  int64_t FirstAtOrAfter(int64_t local) const;
  // The most the clock was set back at once between 2000 and 2100 (0 for a fixed zone): a
  // local day can last that much longer than 24 hours.
  Seconds LongestSetBack() const { return set_back_; }

  bool operator==(const TimeZone& o) const { return zone_ == o.zone_ && offset_ == o.offset_; }

 private:
  TimeZone(const date::time_zone* zone, Seconds offset, Seconds set_back)
      : zone_(zone), offset_(offset), set_back_(set_back) {}

  const date::time_zone* zone_ = nullptr;
  Seconds offset_{0};
  Seconds set_back_{0};
};

}  // namespace hourglass
