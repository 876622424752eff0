#include "app.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <fstream>

#include "hourglass/engine.h"
#include "render.h"

namespace hourglass::cli {

void Fail(int code, std::string message) { throw Exit{code, std::move(message)}; }

int CodeFor(const Error& e) {
  const bool usage = e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kNotFound;
  return usage ? kUsage : kUnavailable;
}

Seconds RetentionOf(const Globals& g) {
  Result<Seconds> retention = ParseDuration(g.retention);
  if (!retention.ok()) Fail(kUsage, "--retention: " + retention.error().message());
  return *retention;
}

Ladder LadderOf(const Globals& g) {
  Result<Ladder> ladder = Ladder::Parse(g.ladder);
  if (!ladder.ok()) Fail(kUsage, "--ladder: " + ladder.error().message());
  return *ladder;
}

Seconds SettleMarginOf(const Globals& g) {
  Result<Seconds> margin =
      g.settle_margin == "0" ? Result<Seconds>(Seconds{0}) : ParseDuration(g.settle_margin);
  if (!margin.ok() || *margin > Seconds{3600}) {
    Fail(kUsage, fmt::format("--settle-margin \"{}\": expected a duration from 0 to 1h, e.g. "
                             "--settle-margin 30s (the most the clients' clocks may differ)",
                             g.settle_margin));
  }
  return *margin;
}

std::optional<Instant> ParseAt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::optional<Instant> at;
  if (ec == std::errc() && end == text.data() + text.size()) {
    at = FromUnix(value);
  } else {
    at = ParseTime(text);
  }
  if (!at || !InRange(*at)) {
    Fail(kUsage,
         fmt::format("--at \"{}\": expected Unix seconds ({} to {}) or an ISO 8601 time with its "
                     "offset (1970 to 9999), e.g. --at 1431857103 or --at 2015-05-17T10:05:03Z",
                     text, ToUnix(kFirstInstant), ToUnix(kLastInstant)));
  }
  return at;
}

uint64_t CheckCost(int64_t cost) {
  if (cost < 1 || static_cast<uint64_t>(cost) > kMaxHitsPerCall) {
    Fail(kUsage,
         fmt::format("--cost {}: must be a whole number from 1 to {}", cost, kMaxHitsPerCall));
  }
  return static_cast<uint64_t>(cost);
}

std::vector<Window> ParseWindows(const std::vector<std::string>& specs) {
  Result<std::vector<Window>> windows = ParseSlidingWindows(specs);
  if (!windows.ok()) Fail(kUsage, "--" + windows.error().message());  // --window "10x": ...
  return std::move(*windows);
}

void Print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void AddCostOption(CLI::App* sub, int64_t& cost) {
  sub->add_option("--cost", cost,
                  fmt::format("how many hits this one counts for: 1 to {}", kMaxHitsPerCall))
      ->capture_default_str();
}

void AddFeatureArgs(CLI::App* sub, std::string& event, std::string& feature) {
  sub->add_option("event", event, "event, e.g. url_shorten")->required();
  sub->add_option("feature", feature,
                  "feature (any bytes), e.g. a client IP; use -- before one that starts with '-'")
      ->required();
}

std::optional<std::string> ReadAdminToken(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  // HTTP drops the white space around a header's value, so a token keeps none either.
  const size_t first = token.find_first_not_of(" \t\r");
  const size_t last = token.find_last_not_of(" \t\r");
  token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
  if (!in || token.empty()) {
    Fail(kUsage,
         fmt::format("--admin-token-file {}: cannot read a token from its first line", path));
  }
  if (token.find_first_of(" \t") != std::string::npos) {
    Fail(kUsage, fmt::format("--admin-token-file {}: the token must not contain spaces", path));
  }
  return token;
}

}  // namespace hourglass::cli
