#include "hourglass/json.h"

#include <algorithm>
#include <charconv>
#include <iterator>

namespace hourglass {

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json DecisionJson(const Decision& d) {
  nlohmann::json limits = nlohmann::json::array();
  for (const LimitOutcome& o : d.limits) {
    limits.push_back({{"window", o.limit.window.length().count()},
                      {"limit", o.limit.max_hits},
                      {"count", o.count},
                      {"remaining", o.remaining},
                      {"retry_after", o.retry_after ? nlohmann::json(o.retry_after->count())
                                                    : nlohmann::json(nullptr)},
                      {"spec", o.limit.ToString()},
                      {"exact", o.exact},
                      {"count_min", o.count_min}});
  }
  nlohmann::json j = {{"allowed", d.allowed},
                      {"at", ToUnix(d.at)},
                      {"degraded", d.degraded},
                      {"recorded", d.recorded},
                      {"retry_after", d.retry_after ? nlohmann::json(d.retry_after->count())
                                                    : nlohmann::json(nullptr)},
                      {"limits", limits},
                      {"keys_read", d.cost.keys_read},
                      {"keys_written", d.cost.keys_written},
                      {"round_trips", d.cost.round_trips},
                      {"cache_hits", d.cost.cache_hits},
                      {"blocked_hits", d.cost.blocked_hits}};
  if (d.store_error) j["error"] = d.store_error->ToString();
  if (d.local) j["local"] = true;
  if (d.blocked_until) j["blocked_until"] = ToUnix(*d.blocked_until);
  return j;
}

namespace {

// `text` as a JSON string, as Dump writes it.
void AppendString(std::string_view text, std::string& out) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += Dump(nlohmann::json(std::string(text)));
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

// A number as JSON writes it.
template <typename Number>
void AppendNumber(Number n, std::string& out) {
  char digits[24];
  const char* end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, static_cast<size_t>(end - digits));
}

void AppendBool(bool b, std::string& out) { out += b ? "true" : "false"; }

void AppendSeconds(const std::optional<Seconds>& s, std::string& out) {
  if (s) {
    AppendNumber(s->count(), out);
  } else {
    out += "null";
  }
}

}  // namespace

void AppendDecisionJson(const Decision& d, bool shadow_denied, std::string& out) {
  // nlohmann::json objects keep their keys sorted: so are these.
  out.reserve(out.size() + 256 + 160 * d.limits.size());
  out += "{\"allowed\":";
  AppendBool(d.allowed, out);
  out += ",\"at\":";
  AppendNumber(ToUnix(d.at), out);
  out += ",\"blocked_hits\":";
  AppendNumber(d.cost.blocked_hits, out);
  if (d.blocked_until) {
    out += ",\"blocked_until\":";
    AppendNumber(ToUnix(*d.blocked_until), out);
  }
  out += ",\"cache_hits\":";
  AppendNumber(d.cost.cache_hits, out);
  out += ",\"degraded\":";
  AppendBool(d.degraded, out);
  if (d.store_error) {
    out += ",\"error\":";
    AppendString(d.store_error->ToString(), out);
  }
  out += ",\"keys_read\":";
  AppendNumber(d.cost.keys_read, out);
  out += ",\"keys_written\":";
  AppendNumber(d.cost.keys_written, out);
  out += ",\"limits\":[";
  for (size_t i = 0; i < d.limits.size(); ++i) {
    const LimitOutcome& o = d.limits[i];
    out += i == 0 ? "{\"count\":" : ",{\"count\":";
    AppendNumber(o.count, out);
    out += ",\"count_min\":";
    AppendNumber(o.count_min, out);
    out += ",\"exact\":";
    AppendBool(o.exact, out);
    out += ",\"limit\":";
    AppendNumber(o.limit.max_hits, out);
    out += ",\"remaining\":";
    AppendNumber(o.remaining, out);
    out += ",\"retry_after\":";
    AppendSeconds(o.retry_after, out);
    out += ",\"spec\":";
    AppendString(o.limit.ToString(), out);
    out += ",\"window\":";
    AppendNumber(o.limit.window.length().count(), out);
    out += '}';
  }
  out += d.local ? "],\"local\":true," : "],";
  out += "\"recorded\":";
  AppendBool(d.recorded, out);
  out += ",\"retry_after\":";
  AppendSeconds(d.retry_after, out);
  out += ",\"round_trips\":";
  AppendNumber(d.cost.round_trips, out);
  if (shadow_denied) out += ",\"shadow_denied\":true";
  out += '}';
}

nlohmann::json CountsJson(std::string_view event, std::string_view feature, const Counts& c) {
  nlohmann::json windows = nlohmann::json::array();
  for (const WindowCount& w : c.windows) {
    nlohmann::json window = {{"window", w.window.length().count()}, {"count", w.count}};
    if (w.lost) window["lost"] = true;
    windows.push_back(std::move(window));
  }
  nlohmann::json j = {{"event", event},
                      {"feature", feature},
                      {"at", ToUnix(c.at)},
                      {"windows", windows},
                      {"missing", c.missing},
                      {"keys_read", c.cost.keys_read},
                      {"round_trips", c.cost.round_trips}};
  if (c.loss) {
    j["loss"] = {{"server", c.loss->server},
                 {"at", ToUnix(c.loss->at)},
                 {"cause", LossCauseName(c.loss->cause)}};
  }
  return j;
}

}  // namespace hourglass
