#include "trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hourglass/engine.h"

namespace hourglass::cli {
namespace {

template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// At most 40 bytes of `text` for a message, saying how long it was when cut.
std::string Excerpt(std::string_view text) {
  if (text.size() <= 40) return std::string(text);
  return fmt::format("{}... ({} bytes)", text.substr(0, 40), text.size());
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::optional<TraceHit>> ParseHitsLine(std::string_view raw) {
  const std::string_view line = Trim(raw);
  if (line.empty() || line.front() == '#') return std::optional<TraceHit>{};
  std::array<std::string_view, 4> fields;
  size_t n = 0, pos = 0;
  while (n < 4) {
    const size_t tab = line.find('\t', pos);
    fields[n++] =
        line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos);
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
    if (n == 4)
      return InvalidArgument(
          "more than 4 tab-separated fields (UNIX_SECONDS EVENT FEATURE [COST])");
  }
  if (n < 3) {
    return InvalidArgument(
        "expected UNIX_SECONDS<TAB>EVENT<TAB>FEATURE[<TAB>COST], fields separated by tabs");
  }
  TraceHit hit;
  if (!ParseNumber(fields[0], hit.at) || !InRange(FromUnix(hit.at))) {
    return InvalidArgument(fmt::format("bad time \"{}\": expected Unix seconds from {} to {}",
                                       Excerpt(fields[0]), ToUnix(kFirstInstant),
                                       ToUnix(kLastInstant)));
  }
  if (fields[1].empty()) return InvalidArgument("empty event");
  hit.event = fields[1];
  hit.feature = fields[2];
  if (n == 4 && (!ParseNumber(fields[3], hit.cost) || hit.cost < 1 || hit.cost > kMaxHitsPerCall)) {
    return InvalidArgument(fmt::format("bad cost \"{}\": expected a whole number from 1 to {}",
                                       Excerpt(fields[3]), kMaxHitsPerCall));
  }
  return std::optional<TraceHit>{std::move(hit)};
}

Result<std::optional<TraceHit>> ParseApacheLine(std::string_view raw, std::string_view event) {
  const std::string_view line = Trim(raw);
  if (line.empty()) return std::optional<TraceHit>{};
  const size_t space = line.find(' ');
  const size_t open = line.find('[');
  const size_t close = line.find(']', open == std::string_view::npos ? 0 : open);
  if (space == 0 || space == std::string_view::npos || open == std::string_view::npos ||
      close == std::string_view::npos) {
    return InvalidArgument(
        "not an Apache combined log line (client ... [dd/Mon/yyyy:HH:MM:SS +ZZZZ])");
  }
  // 17/May/2015:10:05:03 +0000
  const std::string_view stamp = line.substr(open + 1, close - open - 1);
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int day = 0, year = 0, hour = 0, minute = 0, second = 0, zone = 0;
  unsigned month = 0;
  const bool shape = stamp.size() == 26 && stamp[2] == '/' && stamp[6] == '/' && stamp[11] == ':' &&
                     stamp[14] == ':' && stamp[17] == ':' && stamp[20] == ' ' &&
                     (stamp[21] == '+' || stamp[21] == '-');
  for (unsigned m = 0; shape && m < 12; ++m) {
    if (stamp.substr(3, 3) == kMonths[m]) month = m + 1;
  }
  if (!shape || month == 0 || !ParseNumber(stamp.substr(0, 2), day) ||
      !ParseNumber(stamp.substr(7, 4), year) || !ParseNumber(stamp.substr(12, 2), hour) ||
      !ParseNumber(stamp.substr(15, 2), minute) || !ParseNumber(stamp.substr(18, 2), second) ||
      !ParseNumber(stamp.substr(22, 4), zone)) {
    return InvalidArgument(
        fmt::format("bad timestamp \"[{}]\": expected [17/May/2015:10:05:03 +0000]", stamp));
  }
  const std::chrono::year_month_day ymd{std::chrono::year{year}, std::chrono::month{month},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) {
    return InvalidArgument(fmt::format("bad timestamp \"[{}]\": no such date or time", stamp));
  }
  const int64_t offset = (zone / 100 * 60 + zone % 100) * 60 * (stamp[21] == '-' ? -1 : 1);
  TraceHit hit;
  hit.at = std::chrono::sys_days{ymd}.time_since_epoch().count() * 86400 + hour * 3600 +
           minute * 60 + second - offset;
  if (!InRange(FromUnix(hit.at))) {
    return InvalidArgument(fmt::format("bad timestamp \"[{}]\": before 1970", stamp));
  }
  hit.event = event;
  hit.feature = line.substr(0, space);
  return std::optional<TraceHit>{std::move(hit)};
}

static_assert(kMaxTraceLine == 2 * kMaxFieldBytes + 64);

Result<bool> ReadBoundedLine(std::istream& in, std::string& line) {
  line.clear();
  char c = 0;
  while (in.get(c)) {
    if (c == '\n') return true;
    if (line.size() == kMaxTraceLine) {
      return InvalidArgument(fmt::format(
          "a line longer than {} bytes (an event and a feature are at most {} bytes each)",
          kMaxTraceLine, kMaxFieldBytes));
    }
    line.push_back(c);
  }
  return !line.empty();
}

Result<Trace> ReadTrace(const std::string& path, std::string_view format, std::string_view event) {
  if (format != "hits" && format != "apache") {
    return InvalidArgument(fmt::format("--format {}: use hits or apache", format));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(fmt::format("{}: is a directory; give a trace file", path));
  }
  std::ifstream in(path);
  if (!in) {
    return InvalidArgument(
        fmt::format("{}: cannot read the trace file: {}", path, std::strerror(errno)));
  }
  Trace trace;
  std::string line;
  int64_t number = 0;
  while (true) {
    Result<bool> read = ReadBoundedLine(in, line);
    if (!read.ok()) {
      return InvalidArgument(fmt::format("{}:{}: {}", path, number + 1, read.error().message()));
    }
    if (!*read) break;
    ++number;
    Result<std::optional<TraceHit>> hit =
        format == "hits" ? ParseHitsLine(line) : ParseApacheLine(line, event);
    if (!hit.ok())
      return InvalidArgument(fmt::format("{}:{}: {}", path, number, hit.error().message()));
    if (!hit->has_value()) continue;
    (*hit)->line = number;
    if (!trace.hits.empty() && (*hit)->at < trace.hits.back().at) ++trace.out_of_order;
    trace.hits.push_back(std::move(**hit));
  }
  if (in.bad()) {
    return InvalidArgument(fmt::format("{}: reading failed after line {}", path, number));
  }
  // Drive the clock forward only: replay in time order, keeping file order within a second.
  std::stable_sort(trace.hits.begin(), trace.hits.end(),
                   [](const TraceHit& x, const TraceHit& y) { return x.at < y.at; });
  return trace;
}

}  // namespace hourglass::cli
