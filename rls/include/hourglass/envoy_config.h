// envoyproxy/ratelimit's configuration files, loaded unchanged, and that service's matching of a
// request's descriptor to a rate limit.
//
//   Result<EnvoyConfig> config = EnvoyConfig::Load({"config/"});  // files, or folders of them
//   std::vector<EnvoyEntry> entries = {{"database", "users"}};
//   if (std::optional<EnvoyMatch> m = config->Match("mongo_cps", entries)) {
//     engine.Check(m->event, m->feature, Policy{{m->rate_limit->limit}});
//   }
//
// A file has a `domain` and nested `descriptors`, each with a `key`, an optional `value` (each `*`
// in it matches any run of characters: `files/*`, `/api/*/action`), an optional `rate_limit`
// {`unit`, `requests_per_unit`, `unlimited`, `name`, `replaces`} and nested `descriptors`;
// `shadow_mode` per descriptor. hourglass's own `rate_limits`, a list of rate limits beside or
// instead of `rate_limit`, puts several limits on one descriptor (a burst and a daily limit on
// one key), all checked in one decision; the reference's files load unchanged. Matching follows the
// reference: walk the request's entries from the top, at each level taking the descriptor with that
// key and value, else the first wildcard value that matches, else the descriptor with that key and
// no value; the limit of the descriptor reached by the last entry applies. A key without a value
// gives each distinct value its own counter; `share_threshold: true` on a wildcard makes every
// matching value share one.
//
// hourglass reads `unit` SECOND, MINUTE, HOUR, DAY and WEEK as an exact sliding window of that
// length; its own key `window: fixed` in a `rate_limit` reproduces the reference's fixed,
// epoch-aligned windows. MONTH and YEAR are the calendar month and year in UTC, or on the clock of
// the rate_limit's `time_zone: Europe/Berlin` (hourglass's key), daylight saving time included
// (the reference counts them as fixed 30 and 365 days from the epoch). `detailed_metric` and `value_to_metric` are accepted and ignored:
// hourglass never labels a metric with a counted value. Any other unknown key is an error naming
// the file and line.
//
// Thread-safety: immutable after Load; Match may be called from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hourglass/limit.h"
#include "hourglass/status.h"

namespace hourglass {

// The rate limit response's units, with the wire protocol's numbers.
enum class EnvoyUnit {
  kUnknown = 0,
  kSecond = 1,
  kMinute = 2,
  kHour = 3,
  kDay = 4,
  kMonth = 5,
  kYear = 6,
  kWeek = 7
};

// The unit's window: SECOND to WEEK a sliding window of its length (`fixed`: aligned to the Unix
// epoch, as the reference counts); MONTH and YEAR the calendar month and year in UTC (the
// reference counts a MONTH as 30 days and a YEAR as 365, aligned to the epoch). kUnknown: none.
std::optional<Window> EnvoyUnitWindow(EnvoyUnit unit, bool fixed = false);

struct EnvoyRateLimit {
  EnvoyUnit unit = EnvoyUnit::kUnknown;
  uint32_t requests_per_unit = 0;
  bool unlimited = false;  // matches, and is never limited nor counted
  std::string name;
  std::vector<std::string> replaces;  // names of the limits this one drops when both apply
  // The engine's: the unit's window, requests_per_unit hits; none when unlimited.
  std::optional<Limit> limit;
  std::string origin;  // "file:line" of its descriptor, for messages
};

struct EnvoyEntry {
  std::string key;
  std::string value;
};

// A request's entries as one feature, injectively: distinct entry lists, distinct features.
std::string EnvoyFeature(std::span<const EnvoyEntry> entries);

struct EnvoyMatch {
  const EnvoyRateLimit* rate_limit = nullptr;  // the first of rate_limits
  // Every limit of the matched descriptor, `rate_limit` first: into the config, which must
  // outlive the match. An unlimited one is alone.
  std::span<const EnvoyRateLimit> rate_limits;
  bool shadow_mode = false;
  // hourglass's `block_for` on the descriptor: a denial blocks its entries this long (0: none).
  Seconds block_for{0};
  // The event and feature the engine counts under: the domain and the matched descriptor's path
  // ("mongo_cps.database_users", the reference's key), and the request's entries (a shared
  // wildcard counts under its pattern). Distinct descriptors give distinct events, distinct
  // entries distinct features.
  std::string event;
  std::string feature;
};

class EnvoyConfig {
 public:
  // Every .yaml/.yml file of each folder (in name order) and every file named; a domain may
  // appear in one file only. Errors name the file and line.
  static Result<EnvoyConfig> Load(std::span<const std::string> paths);
  // One file's text; `name` is used in errors.
  static Result<EnvoyConfig> Parse(std::string_view yaml, const std::string& name);

  EnvoyConfig(EnvoyConfig&&) noexcept;
  EnvoyConfig& operator=(EnvoyConfig&&) noexcept;
  ~EnvoyConfig();

  // The limit for one descriptor of a request to `domain`; nullopt when none applies (an
  // unknown domain, no descriptor, or a descriptor without a limit).
  std::optional<EnvoyMatch> Match(std::string_view domain,
                                  std::span<const EnvoyEntry> entries) const;
  std::vector<std::string> domains() const;
  // Checks every limit against an engine keeping `retention`: a longer window could never be
  // answered, so such a configuration is refused where it is loaded, naming file:line.
  Status CheckWindows(Seconds retention) const;
  bool HasDomain(std::string_view domain) const { return domains_.contains(domain); }

  struct Node;

 private:
  EnvoyConfig();
  Status Add(std::string_view yaml, const std::string& name);
  std::map<std::string, std::unique_ptr<Node>, std::less<>> domains_;
};

}  // namespace hourglass
