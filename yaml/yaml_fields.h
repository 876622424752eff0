// What both configuration loaders (policy files, Envoy's rate limit files) need of YAML: errors
// that name the file, line and column, maps whose keys are checked (unknown or repeated keys are
// errors, never guessed at), and scalars read as a type or refused naming the field.
//
//   if (Status s = yaml::CheckFields(file, node, {"limits", "mode"}, "field", "an event entry");
//       !s.ok()) return s.error();
//   Result<uint32_t> n = yaml::Scalar<uint32_t>(file, node["n"], "n", "a whole number");
//
// Header-only and internal to the loaders (not installed). Thread-safety: pure functions.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "hourglass/ip_network.h"
#include "hourglass/status.h"

namespace hourglass::yaml {

// "file:line:column: what" at `node` (just "file: what" when the node has no position).
inline Error At(const std::string& file, const YAML::Node& node, const std::string& what) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return InvalidArgument(fmt::format("{}: {}", file, what));
  return InvalidArgument(fmt::format("{}:{}:{}: {}", file, mark.line + 1, mark.column + 1, what));
}

// YAML lets a map repeat a key and a reader keep either value: a repeated key is an error naming
// both lines ("duplicate KIND "k" (first at line 3)"), so that a later entry can never silently
// undo an earlier one (a ban followed by limits for the same feature).
inline Status CheckUnique(const std::string& file, const YAML::Node& map, std::string_view kind) {
  std::map<std::string, int> first_line;
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    const auto [it, inserted] = first_line.emplace(key, kv.first.Mark().line + 1);
    if (!inserted) {
      return At(file, kv.first,
                fmt::format("duplicate {} \"{}\" (first at line {})", kind, key, it->second));
    }
  }
  return {};
}

// A map whose keys must be among `known`, each once: an unknown key is an error naming the known
// ones ("unknown KIND "k" in WHERE (known: a, b)"), a repeated one as CheckUnique says.
inline Status CheckFields(const std::string& file, const YAML::Node& map,
                          std::initializer_list<std::string_view> known, std::string_view kind,
                          std::string_view where) {
  if (!map.IsMap()) return At(file, map, fmt::format("{} must be a map", where));
  if (Status s = CheckUnique(file, map, kind); !s.ok()) return s;
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return At(file, kv.first,
                fmt::format("unknown {} \"{}\" in {} (known: {})", kind, key, where,
                            fmt::join(known, ", ")));
    }
  }
  return {};
}

// A scalar field as T, or an error naming the field and the expected form.
template <typename T>
Result<T> Scalar(const std::string& file, const YAML::Node& node, std::string_view field,
                 std::string_view expected) {
  try {
    if (!node.IsScalar()) throw YAML::BadConversion(node.Mark());
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return At(file, node, fmt::format("\"{}\" must be {}", field, expected));
  }
}

// `feature: ip` (features are client addresses, counted by network) and `ip_prefix: {ipv4: N,
// ipv6: M}` of `map`: the grouping, or none for `feature: text` (the default) or no `feature`.
inline Result<std::optional<IpGrouping>> IpGroupingOf(const std::string& file,
                                                      const YAML::Node& map) {
  const YAML::Node feature = map["feature"];
  const YAML::Node prefix = map["ip_prefix"];
  Result<std::string> kind =
      feature ? Scalar<std::string>(file, feature, "feature", "text or ip") : std::string("text");
  if (!kind.ok()) return kind.error();
  if (*kind != "ip" && *kind != "text")
    return At(file, feature, "feature is text (the default) or ip");
  if (prefix && *kind != "ip") return At(file, prefix, "ip_prefix needs feature: ip");
  if (*kind != "ip") return std::optional<IpGrouping>();
  IpGrouping grouping;
  if (!prefix) return std::optional(grouping);
  if (!prefix.IsMap()) return At(file, prefix, "ip_prefix is a map, e.g. {ipv4: 32, ipv6: 64}");
  if (Status s = CheckFields(file, prefix, {"ipv4", "ipv6"}, "ip_prefix field", "ip_prefix");
      !s.ok()) {
    return s.error();
  }
  for (const auto& [key, bits, target] :
       {std::tuple{"ipv4", 32, &grouping.ipv4}, std::tuple{"ipv6", 128, &grouping.ipv6}}) {
    const YAML::Node n = prefix[key];
    if (!n) continue;
    const std::string text = n.as<std::string>();
    int value = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > bits) {
      return At(file, n, fmt::format("ip_prefix {} is 1 to {}, not \"{}\"", key, bits, text));
    }
    *target = value;
  }
  return std::optional(grouping);
}

}  // namespace hourglass::yaml
