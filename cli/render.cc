#include "render.h"

#include <fmt/format.h>

#include <algorithm>

namespace hourglass::cli {

namespace {

// Calendar fields from days and seconds: no conversion to finer clocks, whose nanosecond counts
// overflow after the year 2262 (every accepted instant reaches 9999-12-31).
struct Civil {
  std::chrono::year_month_day date;
  int64_t hour = 0, minute = 0, second = 0;
};

Civil CivilOf(Instant t) {
  const std::chrono::sys_days day = std::chrono::floor<std::chrono::days>(t);
  const int64_t s = (t - day).count();
  return Civil{std::chrono::year_month_day{day}, s / 3600, s / 60 % 60, s % 60};
}

}  // namespace

std::string FormatTime(Instant t) {
  const Civil c = CivilOf(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", static_cast<int>(c.date.year()),
                     static_cast<unsigned>(c.date.month()), static_cast<unsigned>(c.date.day()),
                     c.hour, c.minute, c.second);
}

namespace {

// Reads `digits` decimal digits at `text[at]` into `value`, moving `at` past them.
bool Digits(std::string_view text, size_t& at, size_t digits, int& value) {
  if (at + digits > text.size()) return false;
  value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  at += digits;
  return true;
}

bool Expect(std::string_view text, size_t& at, std::string_view one_of) {
  if (at >= text.size() || one_of.find(text[at]) == std::string_view::npos) return false;
  ++at;
  return true;
}

// "Z", "+HH:MM", "-HHMM" or "+HH" at `text[at]` to the end: seconds east of UTC.
std::optional<int64_t> Offset(std::string_view text, size_t at) {
  if (text.substr(at) == "Z" || text.substr(at) == "z") return 0;
  const bool west = at < text.size() && text[at] == '-';
  int hours = 0, minutes = 0;
  if (!Expect(text, at, "+-") || !Digits(text, at, 2, hours)) return std::nullopt;
  if (at < text.size() && text[at] == ':') ++at;
  if (at < text.size() && !Digits(text, at, 2, minutes)) return std::nullopt;
  if (at != text.size() || hours > 23 || minutes > 59) return std::nullopt;
  return (west ? -1 : 1) * (hours * 3600 + minutes * 60);
}

}  // namespace

std::optional<Instant> ParseTime(std::string_view text) {
  size_t at = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(text, at, 4, year) || !Expect(text, at, "-") || !Digits(text, at, 2, month) ||
      !Expect(text, at, "-") || !Digits(text, at, 2, day) || !Expect(text, at, "Tt ") ||
      !Digits(text, at, 2, hour) || !Expect(text, at, ":") || !Digits(text, at, 2, minute)) {
    return std::nullopt;
  }
  if (at < text.size() && text[at] == ':' && !(++at, Digits(text, at, 2, second))) {
    return std::nullopt;
  }
  if (at < text.size() && (text[at] == '.' || text[at] == ',')) {
    const size_t start = ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    if (at == start) return std::nullopt;
  }
  const std::optional<int64_t> offset = Offset(text, at);
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!offset || !date.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const int64_t days = std::chrono::sys_days{date}.time_since_epoch().count();
  return FromUnix(days * 86400 + hour * 3600 + minute * 60 + std::min(second, 59) - *offset);
}

std::string FormatTimeOfDay(Instant t, bool with_seconds) {
  const Civil c = CivilOf(t);
  return with_seconds ? fmt::format("{:02}:{:02}:{:02}", c.hour, c.minute, c.second)
                      : fmt::format("{:02}:{:02}", c.hour, c.minute);
}

std::string Sparkline(std::span<const uint64_t> values) {
  static const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const uint64_t max = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  std::string out;
  for (uint64_t v : values) {
    if (v == 0) {
      out += "·";
    } else {
      out += kBars[std::min<uint64_t>(7, (v * 8 - 1) / max)];
    }
  }
  return out;
}

std::string CountsText(const Counts& counts) {
  std::string out;
  for (const WindowCount& w : counts.windows) {
    out += fmt::format("  {:<6} {:>10}{}\n", w.window.ToString(), w.count, w.lost ? " *" : "");
  }
  if (counts.missing > 0) {
    out += fmt::format(
        "  warning: {} of today's hits are missing from the store (its day ledger counts them): "
        "memcached evicted them, or clients of the other --layout wrote them; windows holding all "
        "of today include them\n",
        counts.missing);
  }
  if (counts.loss) {
    out += fmt::format(
        "  warning: {}: windows reaching back before it (marked *) count only what came after\n",
        counts.loss->Describe());
  }
  return out;
}

std::string BlockedText(const std::optional<Instant>& until) {
  if (!until) return "";
  return fmt::format(
      "  blocked until {} by a penalty (block_for); `hourglass reset --policy FILE` lifts it\n",
      FormatTime(*until));
}

}  // namespace hourglass::cli
