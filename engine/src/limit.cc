#include "hourglass/limit.h"

#include <fmt/format.h>

#include <cctype>
#include <optional>

namespace hourglass {

std::string Limit::ToString() const {
  // As people write it: "5/m" rather than "5/1m", "20/10m", "3/fixed 1h".
  std::string w = window.ToString();
  if (window.kind() == WindowKind::kSliding && w.size() == 2 && w[0] == '1') w.erase(0, 1);
  std::string out = std::to_string(max_hits);
  out += '/';
  out += w;
  return out;
}

namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Whether `text` ends with "/" and digits ("5/2": a count of units follows).
bool EndsWithSlashCount(std::string_view text) {
  size_t i = text.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))) --i;
  return i < text.size() && i > 0 && text[i - 1] == '/';
}

// The spellings of Python `limits` in hourglass's: "5 per minute" -> "5/minute",
// "10 / 2 hours" -> "10/2hours"; hourglass's own ("2/s, 5/m") pass unchanged. Linear in the
// length of `text`, words separated by one space.
std::string Normalized(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (IsSpace(text[pos])) {
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < text.size() && !IsSpace(text[end])) ++end;
    std::string_view word = text.substr(pos, end - pos);
    pos = end;
    const bool per = word.size() == 3 && std::tolower(static_cast<unsigned char>(word[0])) == 'p' &&
                     std::tolower(static_cast<unsigned char>(word[1])) == 'e' &&
                     std::tolower(static_cast<unsigned char>(word[2])) == 'r';
    if (per) word = "/";
    const bool join =
        !out.empty() &&
        (out.back() == '/' || word.front() == '/' ||
         (EndsWithSlashCount(out) && std::isalpha(static_cast<unsigned char>(word.front()))));
    if (!out.empty() && !join) out += ' ';
    out += word;
  }
  return out;
}

// What follows "calendar " in a spec, as Window::ToString writes it: "month" (UTC),
// "day+02:00", "month Europe/Berlin".
Result<Window> ParseCalendar(std::string_view spec, std::string_view text) {
  size_t end = 0;
  while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
  const std::optional<CalendarUnit> unit = ParseCalendarUnit(text.substr(0, end));
  if (!unit) {
    return InvalidArgument(fmt::format(
        "limit \"{}\": a calendar window is hour, day, week, month or year, then a UTC offset "
        "or a time zone, e.g. 10000/calendar month Europe/Berlin, 20/calendar day+02:00",
        spec));
  }
  const std::string_view zone = text.substr(end);
  if (zone.empty()) return Window::Calendar(*unit, TimeZone{});
  if (zone.front() == ' ') {
    Result<TimeZone> named = TimeZone::Named(zone.substr(1));
    if (!named.ok()) {
      return InvalidArgument(fmt::format("limit \"{}\": {}", spec, named.error().message()));
    }
    return Window::Calendar(*unit, *named);
  }
  const std::optional<Seconds> offset = ParseUtcOffset(zone);
  if (!offset) {
    return InvalidArgument(fmt::format(
        "limit \"{}\": \"{}\" is neither +HH:MM nor \" ZONE\" (e.g. \" Europe/Berlin\")", spec,
        zone));
  }
  Result<Window> w = Window::Calendar(*unit, *offset);
  if (!w.ok()) return InvalidArgument(fmt::format("limit \"{}\": {}", spec, w.error().message()));
  return w;
}

// One normalized spec.
Result<Limit> ParseOne(std::string_view spec) {
  const std::string_view kExample = "write N/DUR, e.g. 5/m, 20/10m, 100/d";
  const size_t slash = spec.find('/');
  if (slash == std::string_view::npos) {
    return InvalidArgument(fmt::format("limit \"{}\": missing \"/\"; {}", spec, kExample));
  }
  const std::string_view count = spec.substr(0, slash);
  if (count.empty() || count.size() > 18) {
    return InvalidArgument(
        fmt::format("limit \"{}\": bad count \"{}\"; {}", spec, count, kExample));
  }
  uint64_t max_hits = 0;
  for (char c : count) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return InvalidArgument(
          fmt::format("limit \"{}\": bad count \"{}\"; {}", spec, count, kExample));
    }
    max_hits = max_hits * 10 + static_cast<uint64_t>(c - '0');
  }
  std::string_view rest = spec.substr(slash + 1);
  if (rest.starts_with("calendar ")) {
    Result<Window> window = ParseCalendar(spec, rest.substr(9));
    if (!window.ok()) return window.error();
    return Limit{*window, max_hits};
  }
  const bool fixed = rest.starts_with("fixed ");
  if (fixed) rest.remove_prefix(6);
  Result<Seconds> length = ParseDuration(rest);
  if (!length.ok()) {
    return InvalidArgument(fmt::format("limit \"{}\": {}", spec, length.error().message()));
  }
  Result<Window> window = fixed ? Window::Fixed(*length) : Window::Sliding(*length);
  if (!window.ok()) return window.error();
  return Limit{*window, max_hits};
}

// The end of the word of `specs` starting at `pos`.
size_t WordEnd(std::string_view specs, size_t pos) {
  const size_t end = specs.find_first_of(", \t", pos);
  return end == std::string_view::npos ? specs.size() : end;
}

// The end of the spec starting at `pos`: one word, and for "N/fixed" and "N/calendar" the words
// of their window ("N/fixed 1h", "N/calendar month", "N/calendar month Europe/Berlin").
size_t SpecEnd(std::string_view specs, size_t pos) {
  size_t end = WordEnd(specs, pos);
  const std::string_view word = specs.substr(pos, end - pos);
  if (!word.ends_with("/fixed") && !word.ends_with("/calendar")) return end;
  if (end >= specs.size() || specs[end] != ' ') return end;
  end = WordEnd(specs, end + 1);  // the length, or the unit (with its offset)
  if (!word.ends_with("/calendar") || end >= specs.size() || specs[end] != ' ') return end;
  // A zone, unless the next spec (which starts with its count) follows.
  const bool zone =
      end + 1 < specs.size() && !std::isdigit(static_cast<unsigned char>(specs[end + 1]));
  return zone ? WordEnd(specs, end + 1) : end;
}

// An error about `normalized`, which `text` was rewritten to: it names what the user typed too.
Error AsTyped(std::string_view text, std::string_view normalized, const Error& e) {
  if (text == normalized) return e;
  return InvalidArgument(fmt::format("\"{}\" (read as \"{}\"): {}", text, normalized, e.message()));
}

}  // namespace

Result<Limit> ParseLimit(std::string_view text) {
  const std::string normalized = Normalized(text);
  Result<Limit> limit = ParseOne(normalized);
  if (!limit.ok()) return AsTyped(text, normalized, limit.error());
  return limit;
}

Result<std::vector<Limit>> ParseLimits(std::string_view text) {
  const std::string normalized = Normalized(text);
  const std::string_view specs = normalized;
  std::vector<Limit> limits;
  size_t pos = 0;
  while (pos < specs.size()) {
    const char c = specs[pos];
    if (c == ',' || c == ' ' || c == '\t') {
      ++pos;
      continue;
    }
    const size_t end = SpecEnd(specs, pos);
    Result<Limit> limit = ParseOne(specs.substr(pos, end - pos));
    if (!limit.ok()) return AsTyped(text, normalized, limit.error());
    limits.push_back(*limit);
    pos = end;
  }
  if (limits.empty()) return InvalidArgument("no limits given; e.g. \"2/s, 5/m, 10/h, 100/d\"");
  return limits;
}

Status ValidateBlockFor(Seconds block_for) {
  if (block_for >= Seconds{1} && block_for <= kMaxBlockFor) return {};
  return InvalidArgument("block_for is 1s to 400d (how long a denial blocks the feature)");
}

Status ValidateLimits(std::span<const Limit> limits, Seconds retention) {
  for (const Limit& limit : limits) {
    if (limit.window.length() <= retention) continue;
    return InvalidArgument(fmt::format(
        "limit {} is longer than the retention ({}): no check of it could be answered; shorten "
        "the window or raise the retention (--retention, the same on every client)",
        limit.ToString(), FormatDuration(retention)));
  }
  return {};
}

std::string_view CountingModeName(CountingMode mode) {
  return mode == CountingMode::kAdmitted ? "admitted" : "attempts";
}

std::string_view FailureModeName(FailureMode mode) {
  switch (mode) {
    case FailureMode::kFailOpen:
      return "open";
    case FailureMode::kFailClosed:
      return "closed";
    case FailureMode::kLocal:
      return "local";
  }
  return "open";
}

Result<CountingMode> ParseCountingMode(std::string_view text) {
  if (text == "admitted") return CountingMode::kAdmitted;
  if (text == "attempts") return CountingMode::kAttempts;
  return InvalidArgument(fmt::format("mode \"{}\": use admitted or attempts", text));
}

Result<FailureMode> ParseFailureMode(std::string_view text) {
  if (text == "open") return FailureMode::kFailOpen;
  if (text == "closed") return FailureMode::kFailClosed;
  if (text == "local") return FailureMode::kLocal;
  return InvalidArgument(fmt::format("\"{}\": use open, closed or local", text));
}

}  // namespace hourglass
