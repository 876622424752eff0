#include "hourglass/audit_record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

namespace hourglass {
namespace {

using nlohmann::json;

bool IsUtf8(std::string_view text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

std::string Hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

Result<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) return InvalidArgument("an odd number of hex digits");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    for (char c : hex.substr(i, 2)) {
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return InvalidArgument("a character that is not a lowercase hex digit");
      value = value * 16 + static_cast<unsigned>(digit);
    }
    out += static_cast<char>(value);
  }
  return out;
}

// `name` as UTF-8 text, or `name_hex` when it is not.
void PutBytes(json& j, const char* name, std::string_view bytes) {
  if (IsUtf8(bytes)) {
    j[name] = bytes;
  } else {
    j[std::string(name) + "_hex"] = Hex(bytes);
  }
}

Result<std::string> GetBytes(const json& j, const std::string& name) {
  if (j.contains(name) && j[name].is_string()) return j[name].get<std::string>();
  if (j.contains(name + "_hex") && j[name + "_hex"].is_string()) {
    Result<std::string> bytes = Unhex(j[name + "_hex"].get<std::string>());
    if (!bytes.ok())
      return InvalidArgument(fmt::format("{}_hex: {}", name, bytes.error().message()));
    return bytes;
  }
  return InvalidArgument(fmt::format("no {} (a string, or {}_hex)", name, name));
}

json WindowJson(const Window& w) {
  switch (w.kind()) {
    case WindowKind::kSliding:
      return {{"sliding", w.length().count()}};
    case WindowKind::kFixed:
      return {{"fixed", w.length().count()}};
    case WindowKind::kCalendar:
      break;
  }
  const std::string_view unit = CalendarUnitName(w.unit());
  if (w.time_zone().named()) return {{"calendar", unit}, {"time_zone", w.time_zone().name()}};
  return {{"calendar", unit}, {"utc_offset", w.utc_offset().count()}};
}

Result<Window> WindowOf(const json& j) {
  if (!j.is_object()) return InvalidArgument("a window is an object");
  for (const char* kind : {"sliding", "fixed"}) {
    if (j.contains(kind)) {
      if (!j[kind].is_number_integer()) return InvalidArgument(fmt::format("{}: seconds", kind));
      const Seconds length{j[kind].get<int64_t>()};
      return kind[0] == 's' ? Window::Sliding(length) : Window::Fixed(length);
    }
  }
  if (!j.contains("calendar") || !j["calendar"].is_string()) {
    return InvalidArgument("a window is {\"sliding\": s}, {\"fixed\": s} or {\"calendar\": unit}");
  }
  const std::optional<CalendarUnit> unit = ParseCalendarUnit(j["calendar"].get<std::string>());
  if (!unit) return InvalidArgument("calendar: use hour, day, week, month or year");
  if (j.contains("time_zone") && j["time_zone"].is_string()) {
    Result<TimeZone> zone = TimeZone::Named(j["time_zone"].get<std::string>());
    if (!zone.ok()) return zone.error();
    return Window::Calendar(*unit, *zone);
  }
  if (j.contains("utc_offset") && j["utc_offset"].is_number_integer()) {
    return Window::Calendar(*unit, Seconds{j["utc_offset"].get<int64_t>()});
  }
  return InvalidArgument("a calendar window needs utc_offset or time_zone");
}

template <typename T>
Result<T> Field(const json& j, const char* name) {
  if (!j.contains(name)) return InvalidArgument(fmt::format("no {}", name));
  try {
    return j[name].get<T>();
  } catch (const json::exception&) {
    return InvalidArgument(fmt::format("{} has the wrong type", name));
  }
}

}  // namespace

AuditRecord AuditRecordOf(const Engine::CheckRequest& check, const Decision& decision,
                          bool request_allowed, Instant answered) {
  AuditRecord r;
  r.at = ToUnix(decision.at);
  r.done = std::max(r.at, ToUnix(answered));
  r.event = std::string(check.event);
  r.feature = std::string(check.feature);
  r.hits = check.hits;
  r.mode = check.policy->mode;
  r.allowed = decision.allowed;
  r.request_allowed = request_allowed;
  r.binding = check.binding;
  r.recorded = decision.recorded;
  r.degraded = decision.degraded;
  r.blocked = decision.blocked_until.has_value();
  r.peek = !check.record;
  for (size_t i = 0; i < check.policy->limits.size(); ++i) {
    AuditLimit l{check.policy->limits[i]};
    if (i < decision.limits.size()) {
      const LimitOutcome& o = decision.limits[i];
      l.counted = true;
      l.count = o.count;
      l.count_min = o.count_min;
      l.exact = o.exact;
    }
    r.limits.push_back(l);
  }
  return r;
}

std::string AuditLine(const AuditRecord& r) {
  json j = {{"at", r.at}};
  if (r.done > r.at) j["done"] = r.done;
  PutBytes(j, "event", r.event);
  PutBytes(j, "feature", r.feature);
  j["hits"] = r.hits;
  j["mode"] = r.mode == CountingMode::kAttempts ? "attempts" : "admitted";
  j["allowed"] = r.allowed;
  j["request_allowed"] = r.request_allowed;
  j["binding"] = r.binding;
  j["recorded"] = r.recorded;
  j["degraded"] = r.degraded;
  j["blocked"] = r.blocked;
  j["peek"] = r.peek;
  json limits = json::array();
  for (const AuditLimit& l : r.limits) {
    json limit = {{"max", l.limit.max_hits}, {"window", WindowJson(l.limit.window)}};
    if (l.counted) {
      limit["count"] = l.count;
      limit["count_min"] = l.count_min;
      limit["exact"] = l.exact;
    }
    limits.push_back(std::move(limit));
  }
  j["limits"] = std::move(limits);
  return j.dump();
}

Result<AuditRecord> ParseAuditLine(std::string_view line) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("not a JSON object");
  AuditRecord r;
  Result<int64_t> at = Field<int64_t>(j, "at");
  if (!at.ok()) return at.error();
  r.at = *at;
  r.done = r.at;
  if (j.contains("done")) {
    Result<int64_t> done = Field<int64_t>(j, "done");
    if (!done.ok()) return done.error();
    if (*done < r.at) return InvalidArgument("done is before at");
    r.done = *done;
  }
  for (auto [name, out] : {std::pair{"event", &r.event}, std::pair{"feature", &r.feature}}) {
    Result<std::string> bytes = GetBytes(j, name);
    if (!bytes.ok()) return bytes.error();
    *out = std::move(*bytes);
  }
  Result<uint64_t> hits = Field<uint64_t>(j, "hits");
  Result<std::string> mode = Field<std::string>(j, "mode");
  if (!hits.ok()) return hits.error();
  if (!mode.ok() || (*mode != "admitted" && *mode != "attempts")) {
    return InvalidArgument("mode is admitted or attempts");
  }
  r.hits = *hits;
  r.mode = *mode == "attempts" ? CountingMode::kAttempts : CountingMode::kAdmitted;
  for (auto [name, out] :
       {std::pair{"allowed", &r.allowed}, std::pair{"request_allowed", &r.request_allowed},
        std::pair{"binding", &r.binding}, std::pair{"recorded", &r.recorded},
        std::pair{"degraded", &r.degraded}, std::pair{"blocked", &r.blocked},
        std::pair{"peek", &r.peek}}) {
    Result<bool> flag = Field<bool>(j, name);
    if (!flag.ok()) return flag.error();
    *out = *flag;
  }
  if (!j.contains("limits") || !j["limits"].is_array()) return InvalidArgument("no limits list");
  for (const json& limit : j["limits"]) {
    Result<uint64_t> max = limit.is_object() ? Field<uint64_t>(limit, "max")
                                             : Result<uint64_t>(InvalidArgument("a limit"));
    if (!max.ok()) return InvalidArgument(fmt::format("limits: {}", max.error().message()));
    Result<Window> window = WindowOf(limit.contains("window") ? limit["window"] : json());
    if (!window.ok()) return InvalidArgument(fmt::format("window: {}", window.error().message()));
    AuditLimit l{Limit{*window, *max}};
    if (limit.contains("count")) {
      Result<uint64_t> count = Field<uint64_t>(limit, "count");
      Result<uint64_t> count_min = Field<uint64_t>(limit, "count_min");
      Result<bool> exact = Field<bool>(limit, "exact");
      if (!count.ok() || !count_min.ok() || !exact.ok()) {
        return InvalidArgument("a counted limit has count, count_min and exact");
      }
      l.counted = true;
      l.count = *count;
      l.count_min = *count_min;
      l.exact = *exact;
    }
    r.limits.push_back(l);
  }
  return r;
}

}  // namespace hourglass
