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
    out += fmt::format("  {:<6} {:>10}\n", w.window.ToString(), w.count);
  }
  return out;
}

}  // namespace hourglass::cli
