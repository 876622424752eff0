#include "hourglass/limit.h"

#include <fmt/format.h>

#include <cctype>

namespace hourglass {

std::string Limit::ToString() const {
  // As people write it: "5/m" rather than "5/1m", "20/10m", "3/fixed 1h".
  std::string w = window.ToString();
  if (window.kind() == WindowKind::kSliding && w.size() == 2 && w[0] == '1') w.erase(0, 1);
  return fmt::format("{}/{}", max_hits, w);
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
  Result<Seconds> length = ParseDuration(spec.substr(slash + 1));
  if (!length.ok()) {
    return InvalidArgument(fmt::format("limit \"{}\": {}", spec, length.error().message()));
  }
  Result<Window> window = Window::Sliding(*length);
  if (!window.ok()) return window.error();
  return Limit{*window, max_hits};
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
    size_t end = specs.find_first_of(", \t", pos);
    if (end == std::string_view::npos) end = specs.size();
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
