// Policy files: one entry per event with its limits, counting mode, failure mode and
// per-feature overrides (a higher limit for a partner, a ban for an address).
//
//   events:
//     url_shorten:
//       limits: [2/s, 5/m, 10/h, 100/d]       # sliding windows
//       mode: admitted                        # or attempts
//       on_store_failure: open                # or closed, or local (local_share: 1/3)
//       shadow: false                         # true: decide and report, but allow every hit
//       overrides:
//         "198.51.100.10": {limits: [20/s, 100/m]}
//         "203.0.113.66": {deny: true}
//     api:
//       limits: [10/s]
//       feature: ip                           # features are client addresses, see IpGrouping
//       ip_prefix: {ipv4: 32, ipv6: 64}       # counted per /64 (the default); optional
//       overrides:
//         "10.0.0.0/8": {limits: [100/s]}     # ranges; the longest prefix holding the address
//     signup:
//       limits:
//         - 3/h
//         - {max: 10, window: 1d, kind: fixed}
//         - {max: 20, window: day, kind: calendar, utc_offset: "+02:00"}
//     llm_tokens:
//       limits: [20000/m]                     # the default plan
//       request_limits: {max_hits: 1000000, max_window: 1d}  # a check may carry its own limits
//       settle: true                          # POST /v1/settle may correct a charge afterwards
//     login:
//       limits: [5/m]
//       block_for: 15m                        # a denial blocks the feature for 15 minutes
//
//   Result<PolicyFile> file = PolicyFile::Load("policies/example.yaml");
//   Result<Policy> policy = file->For("url_shorten", "203.0.113.66");
//   Result<Resolved> r = file->Resolve("api", "2001:db8:1:2::7");  // feature "2001:db8:1:2::/64"
//   Result<Resolved> plan = file->Resolve("llm_tokens", "tenant-42", *ParseLimits("50000/m"));

//
// Thread-safety: immutable after Load.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hourglass/ip_network.h"
#include "hourglass/limit.h"
#include "hourglass/status.h"

namespace hourglass {

// The most limits one check may carry.
constexpr size_t kMaxCarriedLimits = 8;

// What limits a check of an event may carry in place of the event's (a tenant's plan): each
// window at most max_window long, each count at most max_hits.
struct CarriedLimitBounds {
  uint64_t max_hits = 0;
  Seconds max_window{86400};
};

struct EventPolicy {
  Policy policy;
  // Decide and report, but let every hit through (a service answers "allowed" and says what it
  // would have done): for trying limits on live traffic.
  bool shadow = false;
  std::map<std::string, Policy> overrides;  // by feature, verbatim; a ban denies every hit
  int line = 0;                             // where the event's entry starts (1-based)
  std::map<std::string, int> override_lines;
  // Set for `feature: ip`: features are IP addresses, counted by network; the overrides' keys are
  // then ranges (ip_overrides, longest prefix first, each with its key in `overrides`).
  std::optional<IpGrouping> ip;
  std::vector<std::pair<IpNetwork, std::string>> ip_overrides;
  // Set when checks may carry their own limits (`request_limits`); otherwise they are refused.
  std::optional<CarriedLimitBounds> request_limits;
  // Whether a charge may be corrected after the decision (`settle: true`, POST /v1/settle).
  bool settle = false;
};

// What a hit of event+feature is decided by, and the feature it is counted under.
struct Resolved {
  Policy policy;
  std::string feature;  // as given, or for an IP event its network ("2001:db8:1:2::/64")
};

class PolicyFile {
 public:
  // Errors name the file, the line and the bad part.
  static Result<PolicyFile> Load(const std::string& path);
  static Result<PolicyFile> Parse(std::string_view yaml, const std::string& name = "<policy>");

  // The policy for a hit of event+feature: the feature's override, else the event's.
  // kNotFound naming the known events when the event has no entry.
  Result<Policy> For(std::string_view event, std::string_view feature) const;
  // The policy and the feature to count. For an IP event, the override whose range holds the
  // address with the longest prefix, and the address's network; kInvalidArgument when the
  // feature is not an address (or is a range wider than the network it would be counted by).
  // With `carried` limits (a check that brings its own): they replace the policy's limits (a
  // feature's `deny: true` still denies); kInvalidArgument naming the limit when the event has
  // no `request_limits` or one is outside its bounds.
  Result<Resolved> Resolve(std::string_view event, std::string_view feature,
                           std::span<const Limit> carried = {}) const;
  const std::map<std::string, EventPolicy, std::less<>>& events() const { return events_; }
  // A human explanation of every entry, for `policy validate`.
  std::string Explain() const;
  // Checks every limit (overrides too) against an engine keeping `retention`: a window longer
  // than it could never be answered, so such a file is refused where it is loaded, naming
  // file:line, rather than failing every check of the event later.
  Status CheckWindows(Seconds retention) const;
  // Remarks on limits that are valid but likely mistakes: a limit given twice, a limit that can
  // never bind because another one is at least as strict over a longer window. One line each,
  // naming file:line.
  std::vector<std::string> Remarks() const;

 private:
  // Resolve without carried limits.
  Result<Resolved> ResolveOwn(std::string_view event, std::string_view feature) const;

  std::string name_;
  std::map<std::string, EventPolicy, std::less<>> events_;
};

// A limit that denies every hit: the form of `deny: true`.
Limit DenyAll();
// "5/m", "10/fixed 1d", "3/calendar day+02:00", "deny all".
std::string DescribeLimits(const std::vector<Limit>& limits);

}  // namespace hourglass
