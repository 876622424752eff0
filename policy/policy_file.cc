#include "hourglass/policy_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

#include "hourglass/display_text.h"
#include "yaml_fields.h"

namespace hourglass {
namespace {

using yaml::At;
using yaml::CheckFields;
using yaml::CheckUnique;

Result<Seconds> ParseOffset(std::string_view text) {
  // "+02:00", "-05:30", and "Z" or "0" for UTC
  if (text == "Z" || text == "0") return Seconds{0};
  if (std::optional<Seconds> offset = ParseUtcOffset(text)) return *offset;
  return InvalidArgument(fmt::format("utc_offset \"{}\": write +HH:MM or -HH:MM", text));
}

// {window: hour|day|week|month|year, utc_offset: "+HH:MM" | time_zone: Europe/Berlin} of a
// calendar limit.
Result<Window> ParseCalendarNode(const std::string& name, const YAML::Node& node) {
  const std::string window = node["window"].as<std::string>();
  const std::optional<CalendarUnit> unit = ParseCalendarUnit(window);
  if (!unit) {
    return At(name, node["window"],
              fmt::format("calendar window \"{}\": use hour, day, week, month or year",
                          DisplayText(window)));
  }
  if (node["utc_offset"] && node["time_zone"]) {
    return At(name, node["time_zone"],
              "give utc_offset or time_zone, not both: a time zone's offset follows its daylight "
              "saving time");
  }
  if (node["time_zone"]) {
    Result<TimeZone> zone = TimeZone::Named(node["time_zone"].as<std::string>());
    if (!zone.ok()) return At(name, node["time_zone"], zone.error().message());
    return Window::Calendar(*unit, *zone);
  }
  Seconds offset{0};
  if (node["utc_offset"]) {
    Result<Seconds> parsed = ParseOffset(node["utc_offset"].as<std::string>());
    if (!parsed.ok()) return At(name, node["utc_offset"], parsed.error().message());
    offset = *parsed;
  }
  Result<Window> w = Window::Calendar(*unit, offset);
  if (!w.ok()) return At(name, node, w.error().message());
  return w;
}

// The window of a limit written as a map: kind (default sliding) and window.
Result<Window> ParseWindowNode(const std::string& name, const YAML::Node& node,
                               const std::string& kind) {
  if (kind == "calendar") return ParseCalendarNode(name, node);
  if (kind != "sliding" && kind != "fixed") {
    return At(name, node["kind"],
              fmt::format("unknown kind \"{}\": use sliding, fixed or calendar", kind));
  }
  Result<Seconds> length = ParseDuration(node["window"].as<std::string>());
  if (!length.ok()) return At(name, node["window"], length.error().message());
  Result<Window> w = kind == "sliding" ? Window::Sliding(*length) : Window::Fixed(*length);
  if (!w.ok()) return At(name, node, w.error().message());
  return w;
}

Result<Limit> ParseLimitNode(const std::string& name, const YAML::Node& node) {
  if (node.IsScalar()) {
    Result<Limit> limit = ParseLimit(node.Scalar());
    if (!limit.ok()) return At(name, node, limit.error().message());
    return limit;
  }
  if (!node.IsMap()) {
    return At(name, node, "a limit is \"N/DUR\" (e.g. 5/m) or {max: N, window: DUR, kind: K}");
  }
  if (Status s = CheckFields(name, node, {"max", "window", "kind", "utc_offset", "time_zone"},
                             "limit field", "a limit");
      !s.ok()) {
    return s.error();
  }
  if (!node["max"] || !node["window"]) {
    return At(name, node, "a limit needs max and window, e.g. {max: 10, window: 1d, kind: fixed}");
  }
  const std::string max_text = node["max"].as<std::string>();
  Result<Limit> count = ParseLimit(max_text + "/1s");  // reuse the count rules
  if (!count.ok()) return At(name, node["max"], fmt::format("bad max \"{}\"", max_text));
  const std::string kind = node["kind"] ? node["kind"].as<std::string>() : "sliding";
  Result<Window> w = ParseWindowNode(name, node, kind);
  if (!w.ok()) return w.error();
  for (const char* field : {"utc_offset", "time_zone"}) {
    if (node[field] && kind != "calendar") {
      return At(name, node[field], fmt::format("{} belongs to calendar windows only", field));
    }
  }
  return Limit{*w, count->max_hits};
}

Result<std::vector<Limit>> ParseLimitList(const std::string& name, const YAML::Node& node) {
  if (!node.IsSequence() || node.size() == 0) {
    return At(name, node, "limits must be a non-empty list, e.g. [2/s, 5/m, 10/h, 100/d]");
  }
  std::vector<Limit> limits;
  for (const YAML::Node& item : node) {
    Result<Limit> limit = ParseLimitNode(name, item);
    if (!limit.ok()) return limit.error();
    limits.push_back(*limit);
  }
  return limits;
}

// The event's mode, on_store_failure, local_share, on_data_loss and block_for, if given.
Status ParseModes(const std::string& name, const YAML::Node& node, Policy& policy) {
  if (const YAML::Node mode = node["mode"]) {
    Result<CountingMode> parsed = ParseCountingMode(mode.as<std::string>());
    if (!parsed.ok()) return At(name, mode, parsed.error().message());
    policy.mode = *parsed;
  }
  if (const YAML::Node failure = node["on_store_failure"]) {
    Result<FailureMode> parsed = ParseFailureMode(failure.as<std::string>());
    if (!parsed.ok()) return At(name, failure, "on_store_failure " + parsed.error().message());
    policy.on_store_failure = *parsed;
  }
  if (const YAML::Node loss = node["on_data_loss"]) {
    Result<FailureMode> parsed = ParseFailureMode(loss.as<std::string>());
    if (!parsed.ok()) return At(name, loss, "on_data_loss " + parsed.error().message());
    if (*parsed == FailureMode::kLocal) {
      return At(name, loss, "on_data_loss is open or closed: the store answers, with what it kept");
    }
    policy.on_data_loss = *parsed;
  }
  if (const YAML::Node share = node["local_share"]) {
    if (policy.on_store_failure != FailureMode::kLocal) {
      return At(name, share, "local_share needs on_store_failure: local");
    }
    Result<Share> parsed = ParseShare(share.as<std::string>());
    if (!parsed.ok()) return At(name, share, "local_share: " + parsed.error().message());
    policy.local_share = *parsed;
  }
  if (const YAML::Node block = node["block_for"]) {
    Result<Seconds> length = ParseDuration(block.as<std::string>());
    if (!length.ok()) return At(name, block, "block_for: " + length.error().message());
    if (Status s = ValidateBlockFor(*length); !s.ok()) return At(name, block, s.error().message());
    policy.block_for = *length;
  }
  return {};
}

// One override, {limits: [...]} or {deny: true}, starting from the event's policy.
Result<Policy> ParseOverride(const std::string& name, const YAML::Node& o, Policy policy) {
  if (!o.IsMap()) return At(name, o, "an override is {limits: [...]} or {deny: true}");
  if (Status s = CheckFields(name, o, {"limits", "deny"}, "override field", "an override"); !s.ok())
    return s.error();
  const bool deny = o["deny"] && o["deny"].as<std::string>() == "true";
  if (o["deny"] && !deny && o["deny"].as<std::string>() != "false") {
    return At(name, o["deny"], "deny is true or false");
  }
  if (deny && o["limits"]) return At(name, o, "an override has limits or deny: true, not both");
  if (deny) {
    policy.limits = {DenyAll()};
    return policy;
  }
  if (!o["limits"]) return At(name, o, "an override needs limits or deny: true");
  Result<std::vector<Limit>> limits = ParseLimitList(name, o["limits"]);
  if (!limits.ok()) return limits.error();
  policy.limits = *limits;
  return policy;
}

// `feature: ip` and `ip_prefix: {ipv4: N, ipv6: M}`, if given.
Status ParseFeatureKind(const std::string& name, const YAML::Node& node, EventPolicy& entry) {
  Result<std::optional<IpGrouping>> grouping = yaml::IpGroupingOf(name, node);
  if (!grouping.ok()) return grouping.error();
  entry.ip = *grouping;
  return {};
}

// For an IP event: every override key as a range, longest prefix first.
Status IndexIpOverrides(const std::string& name, const YAML::Node& overrides, EventPolicy& entry) {
  for (const auto& kv : overrides) {
    const std::string key = kv.first.as<std::string>();
    Result<IpNetwork> range = IpNetwork::ParseRange(key);
    if (!range.ok()) {
      return At(name, kv.first,
                "an override of a feature: ip event is an address or a range: " +
                    range.error().message());
    }
    for (const auto& [other, other_key] : entry.ip_overrides) {
      if (other == *range) {
        return At(name, kv.first,
                  fmt::format("override \"{}\" is the range of override \"{}\" (line {})", key,
                              other_key, entry.override_lines[other_key]));
      }
    }
    entry.ip_overrides.emplace_back(*range, key);
  }
  std::stable_sort(
      entry.ip_overrides.begin(), entry.ip_overrides.end(),
      [](const auto& a, const auto& b) { return a.first.length() > b.first.length(); });
  return {};
}

// `request_limits: {max_hits: N, max_window: DUR}` (max_window defaults to a day).
Result<CarriedLimitBounds> ParseCarriedBounds(const std::string& name, const YAML::Node& node) {
  constexpr std::string_view kForm = "request_limits is {max_hits: N, max_window: DUR}";
  if (!node.IsMap()) return At(name, node, std::string(kForm));
  if (Status s = CheckFields(name, node, {"max_hits", "max_window"}, "field", "request_limits");
      !s.ok()) {
    return s.error();
  }
  if (!node["max_hits"]) return At(name, node, fmt::format("{}: max_hits is missing", kForm));
  CarriedLimitBounds bounds;
  Result<uint64_t> max_hits = yaml::Scalar<uint64_t>(name, node["max_hits"], "max_hits",
                                                     "a whole number of hits, at least 1");
  if (!max_hits.ok()) return max_hits.error();
  if (*max_hits < 1) return At(name, node["max_hits"], "\"max_hits\" must be at least 1");
  bounds.max_hits = *max_hits;
  if (const YAML::Node window = node["max_window"]) {
    Result<Seconds> length = ParseDuration(window.as<std::string>());
    if (!length.ok()) return At(name, window, "max_window: " + length.error().message());
    bounds.max_window = *length;
  }
  return bounds;
}

// `shadow` and `settle`: true or false.
Status ParseFlag(const std::string& name, const YAML::Node& node, const char* field, bool& flag) {
  const YAML::Node value = node[field];
  if (!value) return {};
  const std::string text = value.as<std::string>();
  if (text != "true" && text != "false") {
    return At(name, value, fmt::format("{} is true or false", field));
  }
  flag = text == "true";
  return {};
}

Result<EventPolicy> ParseEvent(const std::string& name, const YAML::Node& node) {
  if (!node.IsMap()) return At(name, node, "an event entry is a map with limits, mode, ...");
  if (Status s = CheckFields(
          name, node,
          {"limits", "mode", "on_store_failure", "local_share", "on_data_loss", "shadow",
           "overrides", "feature", "ip_prefix", "request_limits", "settle", "block_for"},
          "field", "an event entry");
      !s.ok()) {
    return s.error();
  }
  if (!node["limits"]) return At(name, node, "missing limits, e.g. limits: [5/m, 100/d]");
  EventPolicy entry;
  Result<std::vector<Limit>> limits = ParseLimitList(name, node["limits"]);
  if (!limits.ok()) return limits.error();
  entry.policy.limits = *limits;
  if (Status s = ParseModes(name, node, entry.policy); !s.ok()) return s.error();
  for (const auto& [field, flag] :
       {std::pair{"shadow", &entry.shadow}, std::pair{"settle", &entry.settle}}) {
    if (Status s = ParseFlag(name, node, field, *flag); !s.ok()) return s.error();
  }
  if (const YAML::Node bounds = node["request_limits"]) {
    Result<CarriedLimitBounds> parsed = ParseCarriedBounds(name, bounds);
    if (!parsed.ok()) return parsed.error();
    entry.request_limits = *parsed;
  }
  if (Status s = ParseFeatureKind(name, node, entry); !s.ok()) return s.error();
  const YAML::Node overrides = node["overrides"];
  if (!overrides) return entry;
  if (!overrides.IsMap()) return At(name, overrides, "overrides is a map: feature -> {limits}");
  if (Status s = CheckUnique(name, overrides, "override"); !s.ok()) return s.error();
  for (const auto& kv : overrides) {
    Result<Policy> policy = ParseOverride(name, kv.second, entry.policy);
    if (!policy.ok()) return policy.error();
    entry.overrides[kv.first.as<std::string>()] = *policy;
    entry.override_lines[kv.first.as<std::string>()] = kv.first.Mark().line + 1;
  }
  if (entry.ip) {
    if (Status s = IndexIpOverrides(name, overrides, entry); !s.ok()) return s.error();
  }
  return entry;
}

}  // namespace

Limit DenyAll() { return Limit{*Window::Sliding(Seconds{1}), 0}; }

std::string DescribeLimits(const std::vector<Limit>& limits) {
  std::string out;
  for (const Limit& limit : limits) {
    if (!out.empty()) out += ", ";
    out += limit == DenyAll() ? "deny all" : limit.ToString();
  }
  return out;
}

Result<PolicyFile> PolicyFile::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return InvalidArgument(
        fmt::format("{}: cannot read the policy file: {}", path, std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

Result<PolicyFile> PolicyFile::Parse(std::string_view yaml, const std::string& name) {
  PolicyFile file;
  file.name_ = name;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap() || !root["events"] || !root["events"].IsMap()) {
      return At(name, root, "a policy file is a map with \"events:\" (see policies/example.yaml)");
    }
    if (Status s = CheckUnique(name, root, "top-level field"); !s.ok()) return s.error();
    if (Status s = CheckUnique(name, root["events"], "event"); !s.ok()) return s.error();
    for (const auto& kv : root) {
      if (kv.first.as<std::string>() != "events") {
        return At(
            name, kv.first,
            fmt::format("unknown top-level field \"{}\" (events)", kv.first.as<std::string>()));
      }
    }
    for (const auto& kv : root["events"]) {
      const std::string event = kv.first.as<std::string>();
      if (event.empty()) return At(name, kv.first, "an event name must not be empty");
      Result<EventPolicy> entry = ParseEvent(name, kv.second);
      if (!entry.ok()) return entry.error();
      entry->line = kv.first.Mark().line + 1;
      file.events_[event] = std::move(*entry);
    }
    if (file.events_.empty()) return At(name, root["events"], "no events defined");
  } catch (const YAML::Exception& e) {
    return InvalidArgument(
        fmt::format("{}:{}:{}: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return file;
}

namespace {

// Every policy of an entry with where it is: the event's own, then each override's.
struct Located {
  std::string where;  // "file:line: event \"e\"" or "... override \"f\""
  const Policy* policy;
  bool ban;
};

std::vector<Located> PoliciesOf(const std::string& file, const std::string& event,
                                const EventPolicy& entry) {
  std::vector<Located> all = {
      {fmt::format("{}:{}: event \"{}\"", file, entry.line, event), &entry.policy, false}};
  for (const auto& [feature, policy] : entry.overrides) {
    const auto line = entry.override_lines.find(feature);
    all.push_back({fmt::format("{}:{}: event \"{}\" override \"{}\"", file,
                               line == entry.override_lines.end() ? entry.line : line->second,
                               event, feature),
                   &policy, policy.limits.size() == 1 && policy.limits[0] == DenyAll()});
  }
  return all;
}

}  // namespace

Status PolicyFile::CheckWindows(Seconds retention) const {
  for (const auto& [event, entry] : events_) {
    if (entry.request_limits && entry.request_limits->max_window > retention) {
      return InvalidArgument(fmt::format(
          "{}:{}: event \"{}\": request_limits max_window {} is longer than the retention {}: "
          "lower it or raise --retention",
          name_, entry.line, event, FormatDuration(entry.request_limits->max_window),
          FormatDuration(retention)));
    }
    for (const Located& p : PoliciesOf(name_, event, entry)) {
      if (Status s = ValidateLimits(p.policy->limits, retention); !s.ok()) {
        return InvalidArgument(fmt::format("{}: {}", p.where, s.error().message()));
      }
    }
  }
  return {};
}

std::vector<std::string> PolicyFile::Remarks() const {
  std::vector<std::string> remarks;
  for (const auto& [event, entry] : events_) {
    for (const Located& p : PoliciesOf(name_, event, entry)) {
      if (p.ban) continue;
      const std::vector<Limit>& limits = p.policy->limits;
      for (size_t i = 0; i < limits.size(); ++i) {
        for (size_t j = 0; j < limits.size(); ++j) {
          if (i == j) continue;
          const Limit& a = limits[i];
          const Limit& b = limits[j];
          if (a == b) {
            if (i < j) {
              remarks.push_back(fmt::format("{}: limit {} is given twice", p.where, a.ToString()));
            }
            continue;
          }
          // b never binds when a allows no more hits over a window b's contains: any hits b
          // would deny, a denies first. Sliding windows only: calendar and fixed ones reset.
          const bool sliding =
              a.window.kind() == WindowKind::kSliding && b.window.kind() == WindowKind::kSliding;
          if (sliding && a.window.length() >= b.window.length() && a.max_hits <= b.max_hits) {
            std::string remark = fmt::format(
                "{}: limit {} never binds: {} allows no more hits over a window at least as long",
                p.where, b.ToString(), a.ToString());
            if (std::find(remarks.begin(), remarks.end(), remark) == remarks.end()) {
              remarks.push_back(std::move(remark));
            }
          }
        }
      }
    }
  }
  return remarks;
}

Result<Policy> PolicyFile::For(std::string_view event, std::string_view feature) const {
  Result<Resolved> resolved = Resolve(event, feature);
  if (!resolved.ok()) return resolved.error();
  return std::move(resolved->policy);
}

namespace {

// An IP event's feature: its network, and the policy of the longest override range holding it.
Result<Resolved> ResolveIp(std::string_view event, const EventPolicy& entry,
                           std::string_view feature) {
  Result<IpNetwork> given = IpNetwork::ParseRange(feature);
  if (!given.ok()) {
    return InvalidArgument(
        fmt::format("event \"{}\" counts IP addresses (feature: ip): {}", event,
                    IpNetwork::ParseAddress(feature.substr(0, feature.find('/'))).ok()
                        ? given.error().message()
                        : IpNetwork::ParseAddress(feature).error().message()));
  }
  const int length = given->v6() ? entry.ip->ipv6 : entry.ip->ipv4;
  if (given->length() < length) {
    return InvalidArgument(fmt::format(
        "event \"{}\" counts IP addresses by /{}: the range {} is wider; give an address", event,
        length, given->ToString()));
  }
  Resolved resolved{entry.policy, given->Truncated(length).ToString()};
  for (const auto& [range, key] : entry.ip_overrides) {
    if (range.Contains(*given)) {
      resolved.policy = entry.overrides.at(key);
      break;
    }
  }
  return resolved;
}

}  // namespace

namespace {

// The policy `resolved` with the limits a check carried in place of its own, within `entry`'s
// bounds; a ban stays a ban.
Status Carry(std::string_view event, const EventPolicy& entry, std::span<const Limit> carried,
             Policy& resolved) {
  if (!entry.request_limits) {
    return InvalidArgument(
        fmt::format("event \"{}\" takes no limits from a request: its policy needs request_limits "
                    "{{max_hits: N, max_window: DUR}}",
                    event));
  }
  if (carried.size() > kMaxCarriedLimits) {
    return InvalidArgument(
        fmt::format("{} limits in one check: at most {}", carried.size(), kMaxCarriedLimits));
  }
  const CarriedLimitBounds& bounds = *entry.request_limits;
  for (const Limit& limit : carried) {
    if (limit.max_hits > bounds.max_hits || limit.window.length() > bounds.max_window) {
      return InvalidArgument(fmt::format(
          "limit {} is outside what event \"{}\" allows a request: at most {} hits over at most "
          "{}",
          limit.ToString(), event, bounds.max_hits, FormatDuration(bounds.max_window)));
    }
  }
  const bool banned = resolved.limits.size() == 1 && resolved.limits.front() == DenyAll();
  if (!banned) resolved.limits.assign(carried.begin(), carried.end());
  return {};
}

}  // namespace

Result<Resolved> PolicyFile::Resolve(std::string_view event, std::string_view feature,
                                     std::span<const Limit> carried) const {
  Result<Resolved> resolved = ResolveOwn(event, feature);
  if (!resolved.ok() || carried.empty()) return resolved;
  if (Status s = Carry(event, events_.find(event)->second, carried, resolved->policy); !s.ok()) {
    return s.error();
  }
  return resolved;
}

Result<Resolved> PolicyFile::ResolveOwn(std::string_view event, std::string_view feature) const {
  auto it = events_.find(std::string(event));
  if (it == events_.end()) {
    std::string known;
    for (const auto& [name, entry] : events_) known += (known.empty() ? "" : ", ") + name;
    return Error(ErrorCode::kNotFound,
                 fmt::format("unknown event \"{}\": the policy file defines {}", event, known));
  }
  const EventPolicy& entry = it->second;
  if (entry.ip) return ResolveIp(event, entry, feature);
  auto o = entry.overrides.find(std::string(feature));
  return Resolved{o != entry.overrides.end() ? o->second : entry.policy, std::string(feature)};
}

namespace {

// "fail open", "fail closed", or "decided here against 1/2 of each limit, then written back".
std::string DescribeStoreFailure(const Policy& p) {
  if (p.on_store_failure != FailureMode::kLocal) {
    return fmt::format("fail {}", FailureModeName(p.on_store_failure));
  }
  return fmt::format("decided here against {} of each limit, then written back",
                     p.local_share ? p.local_share->ToString() : "this service's share");
}

}  // namespace

std::string PolicyFile::Explain() const {
  std::string out;
  for (const auto& [event, entry] : events_) {
    const Policy& p = entry.policy;
    out += fmt::format(
        "{}: {} ({} mode: {}; store unreachable: {}; data lost: {}{})\n", DisplayText(event),
        DescribeLimits(p.limits), CountingModeName(p.mode),
        p.mode == CountingMode::kAdmitted ? "denied hits are not counted" : "every attempt counts",
        DescribeStoreFailure(p), FailureModeName(DataLossMode(p)),
        entry.shadow ? "; shadow: decided and reported, every hit allowed" : "");
    if (p.block_for > Seconds{0}) {
      out += fmt::format("  a denial blocks the feature for {} (every check denied meanwhile)\n",
                         FormatDuration(p.block_for));
    }
    if (entry.ip) {
      out += fmt::format(
          "  features are IP addresses: counted per IPv4 /{} and IPv6 /{}; overrides are ranges, "
          "the longest holding the address wins\n",
          entry.ip->ipv4, entry.ip->ipv6);
    }
    for (const Limit& limit : p.limits) {
      out += fmt::format("  {}: at most {} hit{} in {}\n", limit.ToString(), limit.max_hits,
                         limit.max_hits == 1 ? "" : "s",
                         limit.window.kind() == WindowKind::kSliding
                             ? "any " + FormatDuration(limit.window.length()) + " (sliding)"
                             : limit.window.ToString());
    }
    for (const auto& [feature, policy] : entry.overrides) {
      out += fmt::format("  override \"{}\": {}\n", DisplayText(feature),
                         DescribeLimits(policy.limits));
    }
  }
  return out;
}

}  // namespace hourglass
