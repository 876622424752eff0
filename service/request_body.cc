#include "hourglass/request_body.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <set>

#include "hourglass/engine.h"
#include "hourglass/json.h"

namespace hourglass {
namespace {

using nlohmann::json;

// A key of the request, quoted for an error message (at most 64 bytes of it).
std::string Quoted(std::string_view key) {
  constexpr size_t kShown = 64;
  const std::string shown(key.substr(0, kShown));
  return Dump(json(shown)) + (key.size() > kShown ? "..." : "");
}

// Refuses a field of `j` not in `known`; `what` names the object ("a check").
Status CheckFields(const json& j, std::initializer_list<std::string_view> known,
                   std::string_view what, const std::string& where) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string names;
    for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    return InvalidArgument(
        fmt::format("{}unknown field {}: {} has {}", where, Quoted(key), what, names));
  }
  return {};
}

Status ParseNames(const json& j, const std::string& where, std::string& event,
                  std::string& feature) {
  const auto e = j.find("event");
  if (e == j.end() || !e->is_string() || e->get_ref<const std::string&>().empty()) {
    return InvalidArgument(where + "\"event\" must be a non-empty string");
  }
  event = e->get<std::string>();
  const auto f = j.find("feature");
  if (f == j.end() || !f->is_string())
    return InvalidArgument(where + "\"feature\" must be a string");
  feature = f->get<std::string>();
  return {};
}

// The whole number under `key` within [min, kMaxHitsPerCall]; `fallback` when absent and
// optional.
Result<uint64_t> ParseCount(const json& j, const char* key, uint64_t min, const std::string& where,
                            std::optional<uint64_t> fallback) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (fallback) return *fallback;
    return InvalidArgument(fmt::format("{}\"{}\" is missing", where, key));
  }
  if (!it->is_number_unsigned() || it->get<uint64_t>() < min ||
      it->get<uint64_t>() > kMaxHitsPerCall) {
    return InvalidArgument(fmt::format("{}\"{}\" must be a whole number from {} to {}", where, key,
                                       min, kMaxHitsPerCall));
  }
  return it->get<uint64_t>();
}

// "an object", "a number", ...: what a JSON value is, for errors.
std::string KindOf(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "a list";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "true or false";
  if (j.is_null()) return "null";
  return "a number";
}

Result<std::vector<Limit>> ParseCarried(const json& list, const std::string& where) {
  constexpr std::string_view kForm =
      "\"limits\" must be a list of limits, e.g. [\"100/m\", \"10000/d\"]";
  if (!list.is_array() || list.empty()) {
    return InvalidArgument(where + std::string(kForm) +
                           (list.is_array() ? " (an empty list limits nothing)"
                                            : fmt::format(", not {}", KindOf(list))));
  }
  std::vector<Limit> limits;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& item = list[i];
    if (item.is_object()) {
      // The shape a decision answers with ({"window": 60, "limit": 100, ...}) sent back.
      return InvalidArgument(fmt::format(
          "{}\"limits\"[{}] is an object: a limit here is a spec such as \"100/m\" (the "
          "{{\"window\", \"limit\"}} objects are how answers describe limits)",
          where, i));
    }
    if (!item.is_string()) {
      return InvalidArgument(
          fmt::format("{}{}; \"limits\"[{}] is {}", where, kForm, i, KindOf(item)));
    }
    Result<std::vector<Limit>> parsed = ParseLimits(item.get_ref<const std::string&>());
    if (!parsed.ok()) return InvalidArgument(where + "\"limits\": " + parsed.error().message());
    limits.insert(limits.end(), parsed->begin(), parsed->end());
  }
  return limits;
}

// One check object; `where` names it in errors ("checks[2]: ").
Result<CheckBody> ParseCheck(const json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + "expected a JSON object");
  if (Status s = CheckFields(j, {"event", "feature", "cost", "record", "limits"}, "a check", where);
      !s.ok()) {
    return s.error();
  }
  CheckBody check;
  if (Status s = ParseNames(j, where, check.event, check.feature); !s.ok()) return s.error();
  Result<uint64_t> cost = ParseCount(j, "cost", 1, where, 1);
  if (!cost.ok()) return cost.error();
  check.cost = *cost;
  if (const auto record = j.find("record"); record != j.end()) {
    if (!record->is_boolean()) return InvalidArgument(where + "\"record\" must be true or false");
    check.record = record->get<bool>();
  }
  if (const auto limits = j.find("limits"); limits != j.end()) {
    Result<std::vector<Limit>> carried = ParseCarried(*limits, where);
    if (!carried.ok()) return carried.error();
    check.limits = std::move(*carried);
  }
  return check;
}

// Reads a plain check, the body nearly every check sends: {"event": "...", "feature": "...",
// "cost": N} in any order, cost optional, strings of printable ASCII without escapes. Anything
// else (another field, an escape, a byte outside ASCII, an error to name) is nullopt, for the
// full parse to take: so a body read here reads as the full parse would read it.
class PlainCheck {
 public:
  explicit PlainCheck(std::string_view text) : text_(text) {}

  std::optional<CheckBody> Read() {
    CheckBody check;
    bool event = false, feature = false, cost = false;
    if (!Take('{')) return std::nullopt;
    do {
      std::string_view key;
      if (!String(key) || !Take(':')) return std::nullopt;
      if (key == "event" && !event) {
        event = String(check.event) && !check.event.empty();
        if (!event) return std::nullopt;
      } else if (key == "feature" && !feature) {
        feature = String(check.feature);
        if (!feature) return std::nullopt;
      } else if (key == "cost" && !cost) {
        cost = Cost(check.cost);
        if (!cost) return std::nullopt;
      } else {
        return std::nullopt;
      }
    } while (Take(','));
    if (!Take('}') || !event || !feature) return std::nullopt;
    Space();
    if (at_ != text_.size()) return std::nullopt;
    return check;
  }

 private:
  void Space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  bool Take(char c) {
    Space();
    if (at_ == text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }
  template <typename Out>
  bool String(Out& out) {
    if (!Take('"')) return false;
    const size_t from = at_;
    while (at_ < text_.size() && text_[at_] != '"') {
      const char c = text_[at_];
      if (c < 0x20 || c > 0x7e || c == '\\') return false;
      ++at_;
    }
    if (at_ == text_.size()) return false;
    out = text_.substr(from, at_++ - from);
    return true;
  }
  // 1 to kMaxHitsPerCall, written as JSON writes a whole number.
  bool Cost(uint64_t& out) {
    Space();
    const size_t from = at_;
    uint64_t value = 0;
    while (at_ < text_.size() && at_ - from < 10 && IsDigit(text_[at_])) {
      value = value * 10 + static_cast<uint64_t>(text_[at_++] - '0');
    }
    const bool plain = at_ > from && text_[from] != '0' &&
                       (at_ == text_.size() || (text_[at_] != '.' && text_[at_] != 'e' &&
                                                text_[at_] != 'E' && !IsDigit(text_[at_])));
    if (!plain || value > kMaxHitsPerCall) return false;
    out = value;
    return true;
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

std::optional<CheckBody> ParsePlainCheckBody(std::string_view text) {
  return PlainCheck(text).Read();
}

Result<json> ParseJsonBody(std::string_view text) {
  std::vector<std::set<std::string, std::less<>>> open;  // the keys of each open object
  std::optional<std::string> duplicate;
  const json::parser_callback_t note_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    if (event == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    if (event == json::parse_event_t::key && !open.empty() && !duplicate &&
        !open.back().insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json body = json::parse(text, note_keys, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return InvalidArgument(
        "the request body is not valid JSON (UTF-8, with \\u escapes for any other bytes)");
  }
  if (duplicate) {
    return InvalidArgument(fmt::format(
        "field {} is given twice in one object: give each field once", Quoted(*duplicate)));
  }
  return body;
}

Result<std::vector<CheckBody>> ParseCheckBodies(std::string_view text, size_t max) {
  if (std::optional<CheckBody> plain = ParsePlainCheckBody(text)) {
    std::vector<CheckBody> checks;
    checks.push_back(std::move(*plain));
    return checks;
  }
  Result<json> body = ParseJsonBody(text);
  if (!body.ok()) return body.error();
  std::vector<CheckBody> checks;
  const auto list = body->is_object() ? body->find("checks") : body->end();
  if (!body->is_object() || list == body->end()) {
    Result<CheckBody> one = ParseCheck(*body, "");
    if (!one.ok()) return one.error();
    checks.push_back(std::move(*one));
    return checks;
  }
  for (const auto& [key, value] : body->items()) {
    if (key == "checks") continue;
    return InvalidArgument(fmt::format(
        "a body with \"checks\" takes no other field (found {}): put every check in the list",
        Quoted(key)));
  }
  if (!list->is_array() || list->empty() || list->size() > max) {
    return InvalidArgument(fmt::format("\"checks\" must be a list of 1 to {} checks", max));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Result<CheckBody> one = ParseCheck((*list)[i], fmt::format("checks[{}]: ", i));
    if (!one.ok()) return one.error();
    checks.push_back(std::move(*one));
  }
  return checks;
}

Result<CheckBody> ParseHitBody(std::string_view text) {
  Result<json> body = ParseJsonBody(text);
  if (!body.ok()) return body.error();
  if (!body->is_object()) return InvalidArgument("expected a JSON object");
  if (Status s = CheckFields(*body, {"event", "feature", "cost"}, "a hit", ""); !s.ok()) {
    return s.error();
  }
  return ParseCheck(*body, "");
}

Result<SettleBody> ParseSettleBody(std::string_view text) {
  Result<json> body = ParseJsonBody(text);
  if (!body.ok()) return body.error();
  if (!body->is_object()) return InvalidArgument("expected a JSON object");
  if (body->contains("at") || body->contains("cost") || body->contains("event")) {
    return InvalidArgument(
        "a settlement names its decision by the check's \"settle_token\": send "
        "{\"token\": \"<settle_token>\", \"actual\": N}");
  }
  if (Status s = CheckFields(*body, {"token", "actual"}, "a settlement", ""); !s.ok()) {
    return s.error();
  }
  SettleBody settle;
  const auto token = body->find("token");
  if (token == body->end() || !token->is_string() || token->get_ref<const std::string&>().empty()) {
    return InvalidArgument("\"token\" must be the \"settle_token\" the check answered");
  }
  settle.token = token->get<std::string>();
  Result<uint64_t> actual = ParseCount(*body, "actual", 0, "", std::nullopt);
  if (!actual.ok()) return actual.error();
  settle.actual = *actual;
  return settle;
}

}  // namespace hourglass
