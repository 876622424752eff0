#include "hourglass/json.h"

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
  return j;
}

nlohmann::json CountsJson(std::string_view event, std::string_view feature, const Counts& c) {
  nlohmann::json windows = nlohmann::json::array();
  for (const WindowCount& w : c.windows) {
    windows.push_back({{"window", w.window.length().count()}, {"count", w.count}});
  }
  return {{"event", event},
          {"feature", feature},
          {"at", ToUnix(c.at)},
          {"windows", windows},
          {"keys_read", c.cost.keys_read},
          {"round_trips", c.cost.round_trips}};
}

}  // namespace hourglass
