#include "hourglass/admin_views.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "hourglass/json.h"
#include "hourglass/window.h"

namespace hourglass {
namespace {

using nlohmann::json;

struct TopQuery {
  std::string event;
  int minutes = 5;
  TopBy by = TopBy::kDenied;
  size_t n = 20;
};

Result<int> ParseMinutes(std::string_view text) {
  const Result<Seconds> length = ParseDuration(text);
  if (!length.ok() || length->count() % 60 != 0 || length->count() < 60 ||
      length->count() > 60 * RecentTop::kMinutes) {
    return InvalidArgument(fmt::format(
        "window={}: use whole minutes from 1m to {}m, e.g. window=5m", text, RecentTop::kMinutes));
  }
  return static_cast<int>(length->count() / 60);
}

Result<size_t> ParseRows(std::string_view text) {
  size_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (error != std::errc() || end != text.data() + text.size() || n < 1 || n > 1000) {
    return InvalidArgument(fmt::format("n={}: use a number of rows from 1 to 1000", text));
  }
  return n;
}

Result<TopQuery> ParseTopQuery(const std::vector<QueryParam>& params) {
  TopQuery q;
  for (const QueryParam& param : params) {
    if (param.key == "event") {
      q.event = param.value;
    } else if (param.key == "window") {
      Result<int> minutes = ParseMinutes(param.value);
      if (!minutes.ok()) return minutes.error();
      q.minutes = *minutes;
    } else if (param.key == "by") {
      Result<TopBy> by = ParseTopBy(param.value);
      if (!by.ok()) return by.error();
      q.by = *by;
    } else if (param.key == "n") {
      Result<size_t> n = ParseRows(param.value);
      if (!n.ok()) return n.error();
      q.n = *n;
    } else {
      return InvalidArgument(
          fmt::format("unknown query parameter \"{}\": expected event, window, by, n", param.key));
    }
  }
  if (q.event.empty()) return InvalidArgument("query parameter \"event\" is missing");
  return q;
}

// The sliding windows of `event`'s limits, in seconds: the counts a reader of the view wants.
json WindowsOf(const PolicySource& policies, std::string_view event) {
  json windows = json::array();
  const Policy& policy = policies.file() != nullptr
                             ? policies.file()->events().at(std::string(event)).policy
                             : policies.inline_policy();
  for (const Limit& limit : policy.limits) windows.push_back(limit.window.length().count());
  return windows;
}

json Specs(const std::vector<Limit>& limits) {
  json specs = json::array();
  for (const Limit& limit : limits) specs.push_back(DescribeLimits({limit}));
  return specs;
}

json PolicyJson(const Policy& policy) {
  json j = {{"limits", Specs(policy.limits)},
            {"mode", CountingModeName(policy.mode)},
            {"on_store_failure", FailureModeName(policy.on_store_failure)}};
  if (policy.local_share) j["local_share"] = policy.local_share->ToString();
  if (policy.block_for > Seconds{0}) j["block_for"] = policy.block_for.count();
  return j;
}

}  // namespace

Result<std::string> TopView(const RecentTop& top, const PolicySource& policies,
                            const std::vector<QueryParam>& params, Instant now) {
  Result<TopQuery> q = ParseTopQuery(params);
  if (!q.ok()) return q.error();
  // The policy's events, and those another protocol recorded (Envoy's descriptors).
  if (Status known = policies.HasEvent(q->event); !known.ok() && !top.Knows(q->event)) {
    return known.error();
  }
  const TopAnswer answer = top.Query(q->event, q->minutes, q->by, q->n, now);
  json features = json::array();
  for (const TopRow& row : answer.rows) {
    features.push_back(
        {{"feature", row.feature},
         {"estimate", row.estimate},
         {"error", row.error},
         {"truncated", row.truncated},
         {"last_decision", {{"allowed", row.last.allowed}, {"at", ToUnix(row.last.at)}}}});
  }
  return Dump({{"event", q->event},
               {"by", TopByName(q->by)},
               {"window", q->minutes * 60},
               {"from", ToUnix(answer.from)},
               {"to", ToUnix(answer.to)},
               {"total", answer.total},
               {"bound", answer.bound},
               {"capacity", answer.capacity},
               {"windows", WindowsOf(policies, q->event)},
               {"features", std::move(features)}}) +
         "\n";
}

std::string PolicyView(const PolicySource& policies, const std::string& path) {
  json events = json::object();
  if (const PolicyFile* file = policies.file()) {
    for (const auto& [name, entry] : file->events()) {
      json event = PolicyJson(entry.policy);
      event["shadow"] = entry.shadow;
      event["feature"] = entry.ip ? "ip" : "any";
      event["settle"] = entry.settle;
      if (entry.request_limits) {
        event["request_limits"] = {{"max_hits", entry.request_limits->max_hits},
                                   {"max_window", entry.request_limits->max_window.count()}};
      }
      json overrides = json::object();
      for (const auto& [key, policy] : entry.overrides) overrides[key] = Specs(policy.limits);
      event["overrides"] = std::move(overrides);
      events[name] = std::move(event);
    }
  } else if (!policies.empty()) {
    events["*"] = PolicyJson(policies.inline_policy());
  }
  return Dump({{"file", path.empty() ? json(nullptr) : json(path)}, {"events", events}}) + "\n";
}

}  // namespace hourglass
