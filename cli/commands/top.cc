// hourglass top --service URL[,URL...] [--event E] [--policy F] [--window 5m] [--by denied]
// [--once]: who is limited now, from the services' /v1/top, merged, with exact counts from the
// store.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "../commands.h"
#include "../render.h"
#include "../runtime.h"
#include "../top_merge.h"
#include "../until.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"
#include "hourglass/policy_file.h"

namespace hourglass::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;
using tcp = boost::asio::ip::tcp;

struct TopArgs {
  std::string services;  // "http://h:p,http://h2:p"
  std::string event;     // empty: every event of the policy
  std::string policy;    // --policy: each row's binding limit and when it is free
  std::string window = "5m";
  std::string by = "denied";
  size_t n = 20;
  bool once = false;
  int interval = 2;
  std::string admin_token_file;
};

struct Service {
  std::string name;  // as given
  std::string host, port;
};

std::vector<Service> ParseServices(const std::string& list) {
  std::vector<Service> services;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const std::string text = item.find("://") == std::string::npos ? "http://" + item : item;
    auto url = boost::urls::parse_uri(text);
    if (!url || url->scheme() != "http" || url->host().empty()) {
      Fail(kUsage,
           fmt::format("--service {}: use http://HOST:PORT, e.g. http://127.0.0.1:8080", item));
    }
    services.push_back({item, std::string(url->host()),
                        url->has_port() ? std::string(url->port()) : std::string("80")});
  }
  if (services.empty())
    Fail(kUsage, "--service: give at least one URL, e.g. http://127.0.0.1:8080");
  return services;
}

// GET `target` from `service` within 3 s; the body of a 200, or an error naming the service.
Result<std::string> Get(const Service& service, const std::string& target,
                        const std::optional<std::string>& token) {
  try {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds{3});
    stream.connect(tcp::resolver(io).resolve(service.host, service.port));
    http::request<http::empty_body> request{http::verb::get, target, 11};
    request.set(http::field::host, service.host);
    if (token) request.set(http::field::authorization, "Bearer " + *token);
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    if (response.result() == http::status::unauthorized ||
        response.result() == http::status::forbidden) {
      return Error(ErrorCode::kInvalidArgument,  // the caller's token: retrying will not help
                   fmt::format("{}: {} refused: {}", service.name, response.result_int(),
                               token ? "the admin token given is not the service's"
                                     : "the service wants its admin token: give "
                                       "--admin-token-file FILE (hourglass serve "
                                       "--admin-token-file), or it turned the admin calls off "
                                       "(--no-admin)"));
    }
    if (response.result() != http::status::ok) {
      const json body = json::parse(response.body(), nullptr, false);
      return Error(ErrorCode::kUnavailable,
                   fmt::format("{}: {} {}", service.name, response.result_int(),
                               body.is_object() ? body.value("error", "") : response.body()));
    }
    return std::move(response.body());
  } catch (const boost::system::system_error& e) {
    return Error(ErrorCode::kUnavailable, fmt::format("{}: {}", service.name, e.code().message()));
  } catch (const std::exception& e) {
    return Error(ErrorCode::kUnavailable, fmt::format("{}: {}", service.name, e.what()));
  }
}

ServiceTop ParseAnswer(const json& j, size_t asked) {
  ServiceTop top{.total = j.at("total"), .bound = j.at("bound"), .asked = asked, .rows = {}};
  for (const json& f : j.at("features")) {
    top.rows.push_back({f.at("feature"),
                        f.at("truncated"),
                        f.at("estimate"),
                        f.at("error"),
                        {.allowed = f.at("last_decision").at("allowed"),
                         .at = FromUnix(f.at("last_decision").at("at"))}});
  }
  return top;
}

struct Snapshot {
  MergedTop merged;
  std::vector<int64_t> windows;     // of the event's limits, seconds
  std::vector<std::string> failed;  // services that did not answer
  size_t answered = 0;
};

Snapshot Ask(const TopArgs& a, const std::string& event, const std::vector<Service>& services,
             const std::optional<std::string>& token) {
  const std::string target =
      fmt::format("/v1/top?event={}&window={}&by={}&n={}",
                  boost::urls::encode(event, boost::urls::unreserved_chars), a.window, a.by, a.n);
  Snapshot snap;
  std::vector<ServiceTop> answers;
  for (const Service& service : services) {
    Result<std::string> body = Get(service, target, token);
    const json j = body.ok() ? json::parse(*body, nullptr, false) : json();
    if (!body.ok() || !j.is_object()) {
      snap.failed.push_back(body.ok() ? service.name + ": not a /v1/top answer"
                                      : body.error().message());
      continue;
    }
    try {
      answers.push_back(ParseAnswer(j, a.n));
      // Each length once: a 10/d and a calendar day are both 1d, and count the same.
      snap.windows = j.at("windows").get<std::vector<int64_t>>();
      std::sort(snap.windows.begin(), snap.windows.end());
      snap.windows.erase(std::unique(snap.windows.begin(), snap.windows.end()), snap.windows.end());
      ++snap.answered;
    } catch (const json::exception& e) {
      snap.failed.push_back(fmt::format("{}: not a /v1/top answer ({})", service.name, e.what()));
    }
  }
  snap.merged = MergeTops(answers, a.n);
  return snap;
}

// Where a row stands under the event's policy: "banned" (a limit of 0 hits applies), "blocked
// until HH:MM:SS" (a penalty), "free at HH:MM:SS" with the binding limit, or "ok".
struct Standing {
  std::string status = "-";  // "-": no policy, the event not in it, or the store did not answer
  std::string binds = "-";
  std::optional<Instant> free_at;
};

Standing StandingOf(const Engine& engine, const PolicyFile* policies, const std::string& event,
                    const TopRow& row) {
  if (policies == nullptr || row.truncated) return {};
  Result<Resolved> resolved = policies->Resolve(event, row.feature);
  if (!resolved.ok()) return {};
  const Policy& policy = resolved->policy;
  if (std::any_of(policy.limits.begin(), policy.limits.end(),
                  [](const Limit& l) { return l.max_hits == 0; })) {
    return {.status = "banned", .binds = "ban", .free_at = std::nullopt};
  }
  Result<Decision> peek = engine.Peek(event, resolved->feature, policy);
  if (!peek.ok() || (peek->degraded && peek->limits.empty())) return {};
  Standing s;
  const std::optional<size_t> binding = BindingLimit(*peek);
  if (binding) s.binds = DescribeLimits({peek->limits[*binding].limit});
  s.free_at = FreeAt(*peek);
  if (peek->allowed) {
    s.status = "ok";
  } else if (!s.free_at) {
    s.status = "never";
  } else {
    s.status = fmt::format("{} {}", peek->blocked_until ? "blocked to" : "free at",
                           FormatTimeOfDay(*s.free_at, true));
  }
  return s;
}

// Each row's exact counts in the event's windows, or nullopt when the store did not answer.
std::vector<std::optional<Counts>> ExactCounts(const Engine& engine, const std::string& event,
                                               const Snapshot& snap) {
  std::vector<Window> windows;
  for (int64_t w : snap.windows) windows.push_back(*Window::Sliding(Seconds{w}));
  std::vector<std::optional<Counts>> counts;
  for (const TopRow& row : snap.merged.rows) {
    Result<Counts> c = row.truncated || windows.empty()
                           ? Result<Counts>(Error(ErrorCode::kInvalidArgument, "cut"))
                           : engine.Count(event, row.feature, windows);
    counts.push_back(c.ok() ? std::optional<Counts>(*c) : std::nullopt);
  }
  return counts;
}

std::string Ago(Instant then, Instant now) {
  const int64_t s = ToUnix(now) - ToUnix(then);
  return s < 60     ? fmt::format("{}s ago", std::max<int64_t>(s, 0))
         : s < 3600 ? fmt::format("{}m ago", s / 60)
                    : fmt::format("{}h ago", s / 3600);
}

std::string Table(const TopArgs& a, const std::string& event, const Snapshot& snap,
                  const std::vector<std::optional<Counts>>& counts,
                  const std::vector<Standing>& standings, Instant now) {
  std::string out = fmt::format(
      "hourglass top: {} by {} in the last {}, {} of {} services answered, {} {} in all; "
      "a feature not listed: at most {}   {}\n",
      DisplayText(event), a.by, a.window, snap.answered, snap.answered + snap.failed.size(),
      snap.merged.total, a.by == "denied" ? "denied" : "hits", snap.merged.bound, FormatTime(now));
  for (const std::string& f : snap.failed) out += "  not answering: " + DisplayText(f) + "\n";
  out += fmt::format("{:<40} {:>9} {:>7}  {:<16}", "feature", a.by + "~", "+-error", "last");
  for (int64_t w : snap.windows) out += fmt::format(" {:>7}", FormatDuration(Seconds{w}));
  if (!a.policy.empty()) out += fmt::format("  {:<10} {}", "binds", "now");
  out += "\n";
  for (size_t i = 0; i < snap.merged.rows.size(); ++i) {
    const TopRow& row = snap.merged.rows[i];
    const std::string shown = DisplayText(row.feature, 40);
    out += fmt::format(
        "{:<40} {:>9} {:>7}  {:<16}", shown, row.estimate, row.error,
        fmt::format("{} {}", row.last.allowed ? "allowed" : "denied", Ago(row.last.at, now)));
    for (size_t w = 0; w < snap.windows.size(); ++w) {
      out += counts[i] ? fmt::format(" {:>7}", counts[i]->windows[w].count)
                       : fmt::format(" {:>7}", "-");
    }
    if (!a.policy.empty()) {
      out += fmt::format("  {:<10} {}", standings[i].binds, standings[i].status);
    }
    out += "\n";
  }
  if (snap.merged.rows.empty()) out += "(no checks of this event in the window)\n";
  return out;
}

json SnapshotJson(const TopArgs& a, const std::string& event, const Snapshot& snap,
                  const std::vector<std::optional<Counts>>& counts,
                  const std::vector<Standing>& standings, Instant now) {
  json rows = json::array();
  for (size_t i = 0; i < snap.merged.rows.size(); ++i) {
    const TopRow& row = snap.merged.rows[i];
    json exact = json::array();
    for (size_t w = 0; counts[i] && w < snap.windows.size(); ++w) {
      exact.push_back({{"window", snap.windows[w]}, {"count", counts[i]->windows[w].count}});
    }
    rows.push_back({{"feature", row.feature},
                    {"estimate", row.estimate},
                    {"error", row.error},
                    {"truncated", row.truncated},
                    {"last_decision", {{"allowed", row.last.allowed}, {"at", ToUnix(row.last.at)}}},
                    {"counts", counts[i] ? exact : json(nullptr)}});
    if (!a.policy.empty()) {
      const Standing& st = standings[i];
      rows.back()["status"] = st.status;
      rows.back()["binding"] = st.binds == "-" ? json(nullptr) : json(st.binds);
      rows.back()["free_at"] = st.free_at ? json(ToUnix(*st.free_at)) : json(nullptr);
    }
  }
  return {{"event", event},
          {"by", a.by},
          {"window", a.window},
          {"at", ToUnix(now)},
          {"answered", snap.answered},
          {"failed", snap.failed},
          {"total", snap.merged.total},
          {"bound", snap.merged.bound},
          {"features", rows}};
}

// The events to show: --event's, else every event of the policy file, else of the first
// service's /v1/policy.
std::vector<std::string> EventsToShow(const TopArgs& a, const PolicyFile* policies,
                                      const std::vector<Service>& services,
                                      const std::optional<std::string>& token) {
  if (!a.event.empty()) return {a.event};
  std::vector<std::string> events;
  if (policies != nullptr) {
    for (const auto& [name, entry] : policies->events()) events.push_back(name);
    return events;
  }
  std::vector<std::string> failed;
  for (const Service& service : services) {
    Result<std::string> body = Get(service, "/v1/policy", token);
    const json j = body.ok() ? json::parse(*body, nullptr, false) : json();
    if (j.is_object() && j.contains("events") && j["events"].is_object()) {
      for (const auto& [name, entry] : j["events"].items()) events.push_back(name);
      return events;
    }
    failed.push_back(body.ok() ? service.name + ": not a /v1/policy answer"
                               : body.error().message());
  }
  Fail(kUnavailable,
       fmt::format("no service told its events (give --event E): {}", fmt::join(failed, "; ")));
}

int RunTop(const Globals& g, const TopArgs& a) {
  const std::vector<Service> services = ParseServices(a.services);
  const std::optional<std::string> token = ReadAdminToken(a.admin_token_file);
  std::optional<PolicyFile> policies;
  if (!a.policy.empty()) policies = Unwrap(PolicyFile::Load(a.policy));
  const std::vector<std::string> events =
      EventsToShow(a, policies ? &*policies : nullptr, services, token);
  SystemClock clock;
  Runtime rt(g, clock, policies ? EngineUse::kOneShotExact : EngineUse::kOneShot);
  const bool live = !a.once && isatty(STDOUT_FILENO);
  for (;;) {
    std::string text;
    for (const std::string& event : events) {
      const Snapshot snap = Ask(a, event, services, token);
      if (snap.answered == 0) {
        Fail(kUnavailable, fmt::format("no service answered: {}", fmt::join(snap.failed, "; ")));
      }
      const std::vector<std::optional<Counts>> counts = ExactCounts(rt.engine(), event, snap);
      std::vector<Standing> standings;
      for (const TopRow& row : snap.merged.rows) {
        standings.push_back(StandingOf(rt.engine(), policies ? &*policies : nullptr, event, row));
      }
      const Instant now = clock.Now();
      if (g.json) {
        Print(Dump(SnapshotJson(a, event, snap, counts, standings, now)) + "\n");
      } else {
        text += (text.empty() ? "" : "\n") + Table(a, event, snap, counts, standings, now);
      }
    }
    if (!g.json) Print((live ? "\x1b[H\x1b[2J" : "") + text);
    std::fflush(stdout);
    if (a.once) return kOk;
    std::this_thread::sleep_for(std::chrono::seconds{a.interval});
    if (!live && !g.json) Print("\n");
  }
}

}  // namespace

Command AddTopCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<TopArgs>();
  CLI::App* sub = app.add_subcommand(
      "top", "Who is limited now: the most denied (or hit) features of running services");
  sub->add_option("--service", args->services,
                  "the services' HTTP addresses, comma-separated (http://HOST:PORT); their "
                  "answers are summed")
      ->required();
  sub->add_option("--event", args->event,
                  "the event to rank; default every event (of --policy, else of the first "
                  "service's /v1/policy)");
  sub->add_option("--policy", args->policy,
                  "the services' policy file (env HOURGLASS_POLICY): adds each row's binding "
                  "limit and where it stands now: ok, free at HH:MM:SS, blocked to HH:MM:SS (a "
                  "penalty), banned (a limit of 0), never (a cost over a limit)")
      ->envname("HOURGLASS_POLICY");
  sub->add_option("--window", args->window, "the last minutes, 1m to 15m")->capture_default_str();
  sub->add_option("--by", args->by, "denied or hits")->capture_default_str();
  sub->add_option("-n", args->n, "rows")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  sub->add_flag("--once", args->once, "print once and exit (a script's mode)");
  sub->add_option("--interval", args->interval, "seconds between refreshes")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_option("--admin-token-file", args->admin_token_file,
                  "the services' admin token (hourglass serve --admin-token-file)");
  sub->footer(
      "Each service ranks the checks it decided (a Space-Saving summary per event and minute);\n"
      "the ranks are summed. A row's true weight lies in [estimate - error, estimate]; a feature\n"
      "not listed weighs at most the bound in the header. The columns after `last` are each\n"
      "feature's exact counts in the event's windows, read from the store (--store, --servers):\n"
      "`-` when it does not answer or the feature was cut (longer than 256 bytes).\n"
      "Refreshes every --interval seconds until Ctrl-C; --once and --json for scripts.\n"
      "Exit 2: bad options; 3: no service answered.\n"
      "Examples:\n"
      "  hourglass --servers 10.0.0.5:11211 top --service http://10.0.0.7:8080 --event signup\n"
      "  hourglass top --service http://a:8080,http://b:8080 --event url_shorten --by hits "
      "--window 15m\n"
      "  hourglass --json top --service 127.0.0.1:8080 --event signup --once -n 5");
  return {sub, [&g, args] { return RunTop(g, *args); }};
}

}  // namespace hourglass::cli
