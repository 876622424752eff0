#include "hourglass/time_zone.h"

#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace hourglass {
namespace {

constexpr int64_t kMinute = 60;
constexpr int64_t kHour = 3600;

int64_t UnixOf(date::sys_seconds t) { return t.time_since_epoch().count(); }

// IANA names are ASCII letters, digits and `/_+-`; anything else is refused before the database
// is asked, and never echoed back raw.
bool LooksLikeZoneName(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '+' ||
           c == '-';
  });
}

// The most `zone`'s clock was set back at once from 2000 to 2100.
Seconds LongestSetBackOf(const date::time_zone& zone) {
  using date::sys_seconds;
  const sys_seconds end{std::chrono::seconds{4'102'444'800}};  // 2100-01-01
  Seconds longest{0};
  date::sys_info info = zone.get_info(sys_seconds{std::chrono::seconds{946'684'800}});
  while (info.end < end) {
    const date::sys_info next = zone.get_info(info.end);
    longest = std::max(longest, Seconds{(info.offset - next.offset).count()});
    info = next;
  }
  return longest;
}

}  // namespace

Result<TimeZone> TimeZone::Fixed(Seconds utc_offset) {
  if (utc_offset.count() % kMinute != 0 || utc_offset > Seconds{18 * kHour} ||
      utc_offset < Seconds{-18 * kHour}) {
    return InvalidArgument(fmt::format(
        "UTC offset {}s: must be whole minutes within -18:00..+18:00", utc_offset.count()));
  }
  return TimeZone(nullptr, utc_offset, Seconds{0});
}

Result<TimeZone> TimeZone::Named(std::string_view name) {
  constexpr std::string_view kHint =
      "use an IANA name such as Europe/Berlin or America/New_York (`timedatectl "
      "list-timezones` lists them; Debian's tzdata package holds them)";
  if (!LooksLikeZoneName(name)) {
    return InvalidArgument(
        fmt::format("time zone of {} bytes is not a zone name: {}", name.size(), kHint));
  }
  try {
    const date::time_zone* zone = date::locate_zone(std::string(name));
    return TimeZone(zone, Seconds{0}, LongestSetBackOf(*zone));
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format("unknown time zone \"{}\": {}", name, kHint));
  }
}

std::string TimeZone::name() const {
  if (zone_ != nullptr) return std::string(zone_->name());
  const int64_t off = offset_.count();
  const int64_t a = off < 0 ? -off : off;
  return fmt::format("{}{:02}:{:02}", off < 0 ? '-' : '+', a / kHour, (a % kHour) / kMinute);
}

TimeZone::Period TimeZone::PeriodAt(int64_t t) const {
  if (zone_ == nullptr) {
    return {offset_, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
  const date::sys_info info = zone_->get_info(date::sys_seconds{std::chrono::seconds{t}});
  return {Seconds{info.offset.count()}, UnixOf(info.begin), UnixOf(info.end)};
}

int64_t TimeZone::FirstAtOrAfter(int64_t local) const {
  if (zone_ == nullptr) return local - offset_.count();
  const date::local_info info = zone_->get_info(date::local_seconds{std::chrono::seconds{local}});
  if (info.result == date::local_info::nonexistent) return UnixOf(info.first.end);
  return local - info.first.offset.count();
}

}  // namespace hourglass
