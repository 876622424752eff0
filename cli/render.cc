#include "render.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>

namespace hourglass::cli {

std::string FormatTime(Instant t) { return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", t); }

std::string FormatTimeOfDay(Instant t, bool with_seconds) {
  return with_seconds ? fmt::format("{:%H:%M:%S}", t) : fmt::format("{:%H:%M}", t);
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
