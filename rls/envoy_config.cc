#include "hourglass/envoy_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "hourglass/ip_network.h"
#include "yaml_fields.h"

namespace hourglass {

namespace {

// Whether `text` matches `pattern`, where each '*' matches any run of characters (none included).
bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, resume = 0;  // the last '*' seen, and where it stood
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;  // let the last '*' take one more character
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

struct EnvoyConfig::Node {
  std::string key;
  std::optional<std::string> value;  // none: every value, each its own counter
  bool wildcard = false;             // value has a '*': each matches any run of characters
  bool share_threshold = false;      // a wildcard's values share one counter
  bool shadow_mode = false;
  Seconds block_for{0};                     // hourglass's penalty: a denial blocks this long
  std::optional<IpGrouping> ip;             // hourglass's `feature: ip`: values by network
  std::vector<EnvoyRateLimit> rate_limits;  // `rate_limit`, then `rate_limits` in order
  std::string path;                         // "domain.key_value.key": the event counted under
  int line = 0;
  std::vector<std::unique_ptr<Node>> children;  // in file order

  // The reference's order: this key and value, else the first wildcard matching the value, else
  // this key without a value.
  const Node* Find(const EnvoyEntry& entry) const {
    for (const auto& c : children) {
      if (c->key == entry.key && c->value == entry.value && !c->wildcard) return c.get();
    }
    for (const auto& c : children) {
      if (c->key == entry.key && c->wildcard && GlobMatch(*c->value, entry.value)) return c.get();
    }
    for (const auto& c : children) {
      if (c->key == entry.key && !c->value) return c.get();
    }
    return nullptr;
  }
};

namespace {

using yaml::At;
using yaml::Scalar;

// A map of known keys, each once; `where` names the map in errors ("a descriptor").
Status CheckFields(const std::string& name, const YAML::Node& map,
                   std::initializer_list<std::string_view> known, std::string_view where) {
  return yaml::CheckFields(name, map, known, "key", where);
}

Result<EnvoyUnit> ParseUnit(const std::string& name, const YAML::Node& node) {
  Result<std::string> text = Scalar<std::string>(name, node, "unit", "a unit name");
  if (!text.ok()) return text.error();
  std::string upper = *text;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "SECOND") return EnvoyUnit::kSecond;
  if (upper == "MINUTE") return EnvoyUnit::kMinute;
  if (upper == "HOUR") return EnvoyUnit::kHour;
  if (upper == "DAY") return EnvoyUnit::kDay;
  if (upper == "WEEK") return EnvoyUnit::kWeek;
  if (upper == "MONTH") return EnvoyUnit::kMonth;
  if (upper == "YEAR") return EnvoyUnit::kYear;
  return At(name, node,
            fmt::format("invalid rate limit unit \"{}\": use SECOND, MINUTE, HOUR, DAY, WEEK, "
                        "MONTH or YEAR",
                        *text));
}

}  // namespace

std::optional<Window> EnvoyUnitWindow(EnvoyUnit unit, bool fixed) {
  int64_t length = 0;
  switch (unit) {
    case EnvoyUnit::kSecond:
      length = 1;
      break;
    case EnvoyUnit::kMinute:
      length = 60;
      break;
    case EnvoyUnit::kHour:
      length = 3600;
      break;
    case EnvoyUnit::kDay:
      length = 86400;
      break;
    case EnvoyUnit::kWeek:
      length = 7 * 86400;
      break;
    case EnvoyUnit::kMonth:
      return Window::Calendar(CalendarUnit::kMonth, TimeZone{});
    case EnvoyUnit::kYear:
      return Window::Calendar(CalendarUnit::kYear, TimeZone{});
    case EnvoyUnit::kUnknown:
      return std::nullopt;
  }
  return fixed ? *Window::Fixed(Seconds{length}) : *Window::Sliding(Seconds{length});
}

namespace {

Result<EnvoyRateLimit> ParseRateLimit(const std::string& name, const YAML::Node& node) {
  if (Status s = CheckFields(
          name, node,
          {"unit", "requests_per_unit", "unlimited", "name", "replaces", "window", "time_zone"},
          "rate_limit");
      !s.ok()) {
    return s.error();
  }
  EnvoyRateLimit r;
  if (node["unlimited"]) {
    Result<bool> unlimited = Scalar<bool>(name, node["unlimited"], "unlimited", "true or false");
    if (!unlimited.ok()) return unlimited.error();
    r.unlimited = *unlimited;
  }
  if (node["unit"]) {
    if (r.unlimited) return At(name, node["unit"], "an unlimited rate_limit takes no unit");
    Result<EnvoyUnit> unit = ParseUnit(name, node["unit"]);
    if (!unit.ok()) return unit.error();
    r.unit = *unit;
  } else if (!r.unlimited) {
    return At(name, node,
              "rate_limit needs a unit (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR)");
  }
  if (node["requests_per_unit"]) {
    Result<uint32_t> n = Scalar<uint32_t>(name, node["requests_per_unit"], "requests_per_unit",
                                          "a whole number from 0 to 4294967295");
    if (!n.ok()) return n.error();
    r.requests_per_unit = *n;
  }
  if (node["name"]) {
    Result<std::string> n = Scalar<std::string>(name, node["name"], "name", "a string");
    if (!n.ok()) return n.error();
    r.name = *n;
  }
  if (const YAML::Node replaces = node["replaces"]) {
    if (!replaces.IsSequence()) return At(name, replaces, "\"replaces\" must be a list of {name}");
    for (const YAML::Node& item : replaces) {
      if (Status s = CheckFields(name, item, {"name"}, "a replaces entry"); !s.ok()) {
        return s.error();
      }
      Result<std::string> n = item["name"]
                                  ? Scalar<std::string>(name, item["name"], "name", "a string")
                                  : Result<std::string>(std::string());
      if (!n.ok()) return n.error();
      if (n->empty()) return At(name, item, "a replaces entry needs a name");
      if (*n == r.name) return At(name, item, fmt::format("\"{}\" cannot replace itself", *n));
      r.replaces.push_back(*n);
    }
  }
  bool fixed = false;
  if (node["window"]) {
    Result<std::string> w = Scalar<std::string>(name, node["window"], "window", "sliding or fixed");
    if (!w.ok()) return w.error();
    if (*w != "sliding" && *w != "fixed") {
      return At(name, node["window"], fmt::format("window \"{}\": use sliding or fixed", *w));
    }
    fixed = *w == "fixed";
    if (r.unit == EnvoyUnit::kMonth || r.unit == EnvoyUnit::kYear) {
      return At(name, node["window"],
                "a MONTH or YEAR is the calendar month or year in UTC: give it no window");
    }
  }
  std::optional<Window> window = EnvoyUnitWindow(r.unit, fixed);
  if (const YAML::Node zone = node["time_zone"]) {  // hourglass's: a month in a tenant's zone
    if (!window || window->kind() != WindowKind::kCalendar) {  // MONTH and YEAR are
      return At(name, zone,
                "time_zone belongs to a MONTH or YEAR (the calendar month or year on that zone's "
                "clock); the other units are sliding windows");
    }
    Result<std::string> text = Scalar<std::string>(name, zone, "time_zone", "Europe/Berlin");
    if (!text.ok()) return text.error();
    Result<TimeZone> named = TimeZone::Named(*text);
    if (!named.ok()) return At(name, zone, named.error().message());
    window = Window::Calendar(window->unit(), *named);  // the same unit, on the zone's clock
  }
  if (!r.unlimited) r.limit = Limit{*window, r.requests_per_unit};
  return r;
}

// A descriptor's `rate_limit` and `rate_limits` (hourglass's: several limits, all checked), into
// node.rate_limits. An unlimited one stands alone; two limits of one unit and kind are refused.
Status LoadRateLimits(const std::string& name, const YAML::Node& item, EnvoyConfig::Node& node) {
  std::vector<YAML::Node> specs;
  if (const YAML::Node one = item["rate_limit"]) specs.push_back(one);
  if (const YAML::Node list = item["rate_limits"]) {
    if (!list.IsSequence() || list.size() == 0) {
      return At(name, list,
                "\"rate_limits\" must be a non-empty list of rate limits, e.g. [{unit: second, "
                "requests_per_unit: 10}, {unit: day, requests_per_unit: 10000}]");
    }
    for (const YAML::Node& spec : list) specs.push_back(spec);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const YAML::Node& spec = specs[i];
    Result<EnvoyRateLimit> r = ParseRateLimit(name, spec);
    if (!r.ok()) return r.error();
    // The reference's rate_limit is named by its descriptor's line, a listed one by its own.
    const bool listed = i > 0 || !item["rate_limit"];
    r->origin = fmt::format("{}:{}", name, listed ? spec.Mark().line + 1 : node.line);
    if (specs.size() > 1 && r->unlimited) {
      return At(name, spec,
                "an unlimited rate limit stands alone: drop the descriptor's other limits");
    }
    for (const EnvoyRateLimit& earlier : node.rate_limits) {
      if (earlier.limit->window == r->limit->window) {
        return At(name, spec,
                  fmt::format("two limits of one descriptor over the same window (the first at "
                              "{}): give each unit once",
                              earlier.origin));
      }
    }
    node.rate_limits.push_back(std::move(*r));
  }
  return {};
}

// Loads the descriptors under `parent`; `paths` holds every path of the domain so far, with its
// line, so that two descriptors never count under one event.
// hourglass's `block_for: DUR` on a descriptor with a limit: a denial blocks its entries for
// that long, as a policy file's block_for does.
Status LoadBlockFor(const std::string& name, const YAML::Node& item, EnvoyConfig::Node& node) {
  const YAML::Node block = item["block_for"];
  if (!block) return {};
  Result<std::string> text = Scalar<std::string>(name, block, "block_for", "a duration");
  if (!text.ok()) return text.error();
  Result<Seconds> length = ParseDuration(*text);
  if (!length.ok()) return At(name, block, "block_for: " + length.error().message());
  if (Status s = ValidateBlockFor(*length); !s.ok()) return At(name, block, s.error().message());
  const bool limited = std::any_of(node.rate_limits.begin(), node.rate_limits.end(),
                                   [](const EnvoyRateLimit& r) { return !r.unlimited; });
  if (!limited) return At(name, block, "block_for needs a rate limit on the same descriptor");
  node.block_for = *length;
  return {};
}

Status LoadDescriptors(const std::string& name, const YAML::Node& list, EnvoyConfig::Node& parent,
                       std::map<std::string, int>& paths) {
  if (!list || list.IsNull()) return {};
  if (!list.IsSequence()) return At(name, list, "\"descriptors\" must be a list");
  for (const YAML::Node& item : list) {
    if (Status s = CheckFields(name, item,
                               {"key", "value", "rate_limit", "rate_limits", "descriptors",
                                "shadow_mode", "detailed_metric", "value_to_metric",
                                "share_threshold", "block_for", "feature", "ip_prefix"},
                               "a descriptor");
        !s.ok()) {
      return s;
    }
    auto node = std::make_unique<EnvoyConfig::Node>();
    node->line = item.Mark().line + 1;
    Result<std::string> key = item["key"]
                                  ? Scalar<std::string>(name, item["key"], "key", "a string")
                                  : Result<std::string>(std::string());
    if (!key.ok()) return key.error();
    if (key->empty()) return At(name, item, "a descriptor needs a non-empty key");
    node->key = *key;
    if (item["value"]) {
      Result<std::string> value = Scalar<std::string>(name, item["value"], "value", "a string");
      if (!value.ok()) return value.error();
      if (!value->empty()) node->value = *value;
    }
    node->wildcard = node->value && node->value->find('*') != std::string::npos;
    for (const auto& [field, target] : {std::pair{"shadow_mode", &node->shadow_mode},
                                        std::pair{"share_threshold", &node->share_threshold}}) {
      if (!item[field]) continue;
      Result<bool> flag = Scalar<bool>(name, item[field], field, "true or false");
      if (!flag.ok()) return flag.error();
      *target = *flag;
    }
    for (const char* ignored : {"detailed_metric", "value_to_metric"}) {
      if (!item[ignored]) continue;
      if (Result<bool> flag = Scalar<bool>(name, item[ignored], ignored, "true or false");
          !flag.ok()) {
        return flag.error();
      }
    }
    if (node->share_threshold && !node->wildcard) {
      return At(name, item["share_threshold"],
                "share_threshold needs a wildcard value (one with a *)");
    }
    for (const auto& sibling : parent.children) {
      if (sibling->key == node->key && sibling->value == node->value) {
        return At(name, item,
                  fmt::format("duplicate descriptor key \"{}\"{} (first at line {})", node->key,
                              node->value ? fmt::format(" value \"{}\"", *node->value) : "",
                              sibling->line));
      }
    }
    node->path = parent.path + "." + node->key + (node->value ? "_" + *node->value : "");
    if (const auto [it, fresh] = paths.emplace(node->path, node->line); !fresh) {
      return At(name, item,
                fmt::format("descriptor \"{}\" counts under the same name as line {}: rename a "
                            "key or value",
                            node->path, it->second));
    }
    if (Status s = LoadRateLimits(name, item, *node); !s.ok()) return s;
    if (Status s = LoadBlockFor(name, item, *node); !s.ok()) return s;
    Result<std::optional<IpGrouping>> ip = yaml::IpGroupingOf(name, item);
    if (!ip.ok()) return ip.error();
    node->ip = *ip;
    if (Status s = LoadDescriptors(name, item["descriptors"], *node, paths); !s.ok()) return s;
    parent.children.push_back(std::move(node));
  }
  return {};
}

void AppendEntry(std::string& feature, const std::string& key, const std::string& value) {
  fmt::format_to(std::back_inserter(feature), "{}:{}{}:{}", key.size(), key, value.size(), value);
}

// The request's entries as one feature; a shared wildcard's value is its pattern.
// A client address as its network ("2001:db8:1:2::/64"); a value that is not an address counts as
// itself.
std::string NetworkOf(std::string_view value, const IpGrouping& grouping) {
  Result<IpNetwork> address = IpNetwork::ParseAddress(value);
  if (!address.ok()) return std::string(value);
  return address->Truncated(address->v6() ? grouping.ipv6 : grouping.ipv4).ToString();
}

std::string FeatureOf(std::span<const EnvoyEntry> entries,
                      std::span<const EnvoyConfig::Node* const> chain) {
  std::string feature;
  for (size_t i = 0; i < entries.size(); ++i) {
    const bool shared = i < chain.size() && chain[i]->share_threshold;
    if (i < chain.size() && chain[i]->ip) {
      AppendEntry(feature, entries[i].key, NetworkOf(entries[i].value, *chain[i]->ip));
      continue;
    }
    AppendEntry(feature, entries[i].key, shared ? *chain[i]->value : entries[i].value);
  }
  return feature;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("{}: cannot read the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string EnvoyFeature(std::span<const EnvoyEntry> entries) { return FeatureOf(entries, {}); }

EnvoyConfig::EnvoyConfig() = default;
EnvoyConfig::EnvoyConfig(EnvoyConfig&&) noexcept = default;
EnvoyConfig& EnvoyConfig::operator=(EnvoyConfig&&) noexcept = default;
EnvoyConfig::~EnvoyConfig() = default;

namespace {

Status CheckNodeWindows(const EnvoyConfig::Node& node, Seconds retention) {
  for (const EnvoyRateLimit& r : node.rate_limits) {
    if (!r.limit) continue;
    if (Status s = ValidateLimits({&*r.limit, 1}, retention); !s.ok()) {
      return InvalidArgument(
          fmt::format("{}: descriptor \"{}\": {}", r.origin, node.path, s.error().message()));
    }
  }
  for (const auto& child : node.children) {
    if (Status s = CheckNodeWindows(*child, retention); !s.ok()) return s;
  }
  return {};
}

}  // namespace

Status EnvoyConfig::CheckWindows(Seconds retention) const {
  for (const auto& [domain, node] : domains_) {
    if (Status s = CheckNodeWindows(*node, retention); !s.ok()) return s;
  }
  return {};
}

Result<EnvoyConfig> EnvoyConfig::Parse(std::string_view yaml, const std::string& name) {
  EnvoyConfig config;
  if (Status s = config.Add(yaml, name); !s.ok()) return s.error();
  return config;
}

Result<EnvoyConfig> EnvoyConfig::Load(std::span<const std::string> paths) {
  namespace fs = std::filesystem;
  EnvoyConfig config;
  for (const std::string& path : paths) {
    std::vector<std::string> files;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) {
          files.push_back(e.path().string());
        }
      }
      if (ec)
        return InvalidArgument(fmt::format("{}: cannot list the folder: {}", path, ec.message()));
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        return InvalidArgument(fmt::format("{}: no .yaml or .yml file in this folder", path));
      }
    } else {
      files.push_back(path);
    }
    for (const std::string& file : files) {
      Result<std::string> text = ReadFile(file);
      if (!text.ok()) return text.error();
      if (Status s = config.Add(*text, file); !s.ok()) return s.error();
    }
  }
  return config;
}

Status EnvoyConfig::Add(std::string_view yaml, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(
        fmt::format("{}:{}:{}: not YAML: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (Status s = CheckFields(name, root, {"domain", "descriptors"}, "the file"); !s.ok()) return s;
  Result<std::string> domain = root["domain"]
                                   ? Scalar<std::string>(name, root["domain"], "domain", "a string")
                                   : Result<std::string>(std::string());
  if (!domain.ok()) return domain.error();
  if (domain->empty()) return At(name, root, "the file needs a non-empty \"domain\"");
  if (domains_.contains(*domain)) {
    return At(name, root["domain"], fmt::format("domain \"{}\" is already loaded", *domain));
  }
  auto top = std::make_unique<Node>();
  top->path = *domain;
  std::map<std::string, int> paths;
  if (Status s = LoadDescriptors(name, root["descriptors"], *top, paths); !s.ok()) return s;
  domains_.emplace(*domain, std::move(top));
  return {};
}

std::optional<EnvoyMatch> EnvoyConfig::Match(std::string_view domain,
                                             std::span<const EnvoyEntry> entries) const {
  const auto it = domains_.find(domain);
  if (it == domains_.end() || entries.empty()) return std::nullopt;
  const Node* node = it->second.get();
  const Node* matched = nullptr;
  std::vector<const Node*> chain;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Node* next = node->Find(entries[i]);
    if (next == nullptr) break;
    chain.push_back(next);
    if (!next->rate_limits.empty() && i + 1 == entries.size()) matched = next;
    if (next->children.empty()) break;
    node = next;
  }
  if (matched == nullptr) return std::nullopt;
  return EnvoyMatch{&matched->rate_limits.front(),
                    matched->rate_limits,
                    matched->shadow_mode,
                    matched->block_for,
                    matched->path,
                    FeatureOf(entries, chain)};
}

std::vector<std::string> EnvoyConfig::domains() const {
  std::vector<std::string> names;
  for (const auto& [name, node] : domains_) names.push_back(name);
  return names;
}

}  // namespace hourglass
