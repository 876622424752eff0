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
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

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

}  // namespace hourglass::yaml
