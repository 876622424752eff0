#include "hourglass/json.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
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

void AppendSeconds(const std::optional<Seconds>& s, std::string& out) {
  if (s) {
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}"), s->count());
  } else {
    out += "null";
  }
}

}  // namespace

void AppendDecisionJson(const Decision& d, bool shadow_denied, std::string& out) {
  // nlohmann::json objects keep their keys sorted: so are these.
  auto it = std::back_inserter(out);
  fmt::format_to(it, FMT_COMPILE("{{\"allowed\":{},\"at\":{},\"blocked_hits\":{},"), d.allowed,
                 ToUnix(d.at), d.cost.blocked_hits);
  if (d.blocked_until) {
    fmt::format_to(it, FMT_COMPILE("\"blocked_until\":{},"), ToUnix(*d.blocked_until));
  }
  fmt::format_to(it, FMT_COMPILE("\"cache_hits\":{},\"degraded\":{},"), d.cost.cache_hits,
                 d.degraded);
  if (d.store_error) {
    out += "\"error\":";
    AppendString(d.store_error->ToString(), out);
    out += ',';
  }
  fmt::format_to(it, FMT_COMPILE("\"keys_read\":{},\"keys_written\":{},\"limits\":["),
                 d.cost.keys_read, d.cost.keys_written);
  for (size_t i = 0; i < d.limits.size(); ++i) {
    const LimitOutcome& o = d.limits[i];
    fmt::format_to(it,
                   FMT_COMPILE("{}{{\"count\":{},\"count_min\":{},\"exact\":{},\"limit\":{},"
                               "\"remaining\":{},\"retry_after\":"),
                   i == 0 ? "" : ",", o.count, o.count_min, o.exact, o.limit.max_hits, o.remaining);
    AppendSeconds(o.retry_after, out);
    out += ",\"spec\":";
    AppendString(o.limit.ToString(), out);
    fmt::format_to(it, FMT_COMPILE(",\"window\":{}}}"), o.limit.window.length().count());
  }
  out += d.local ? "],\"local\":true," : "],";
  fmt::format_to(it, FMT_COMPILE("\"recorded\":{},\"retry_after\":"), d.recorded);
  AppendSeconds(d.retry_after, out);
  fmt::format_to(it, FMT_COMPILE(",\"round_trips\":{}"), d.cost.round_trips);
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
