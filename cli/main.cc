// hourglass: count, check, inspect, reset and replay counters from the shell.
//
// Exit codes: 0 ok (check: allowed), 1 check denied, 2 bad usage or input, 3 store unreachable.
// Results go to stdout (text, or JSON with --json); messages go to stderr.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <unordered_map>

#include "hourglass/engine.h"
#include "hourglass/memcached_store.h"
#include "hourglass/memory_store.h"
#include "policy_file.h"
#include "render.h"
#include "trace.h"

namespace hourglass::cli {
namespace {

constexpr int kOk = 0;
constexpr int kDenied = 1;
constexpr int kUsage = 2;
constexpr int kUnavailable = 3;

using nlohmann::json;

// Thrown to leave a command with an exit code; the message goes to stderr.
struct Exit {
  int code;
  std::string message;
};

[[noreturn]] void Fail(int code, std::string message) { throw Exit{code, std::move(message)}; }

int CodeFor(const Error& e) {
  return e.code() == ErrorCode::kInvalidArgument ? kUsage : kUnavailable;
}

template <typename T>
T Unwrap(Result<T> r) {
  if (!r.ok()) Fail(CodeFor(r.error()), r.error().message());
  return std::move(*r);
}

struct Globals {
  std::string servers = "127.0.0.1:11211";
  std::string store = "memcached";
  std::string name_space = "hg";
  bool json = false;
  int timeout_ms = 500;
  std::string retention = "1d";
  bool exact_cover = false;  // no hot path: every check reads its exact cover
};

// The store and engine a command runs on. `clock` is the wall clock, or a manual one for replay.
class Runtime {
 public:
  // `hot_path`: the engine's hot path with the blocked-client cache (replay); otherwise the
  // defaults (a one-shot command has nothing to cache).
  Runtime(const Globals& g, const Clock& clock, bool hot_path = false,
          bool exact_retry_after = false) {
    if (g.timeout_ms < 1 || g.timeout_ms > 600000) {
      Fail(kUsage, fmt::format("--timeout-ms {}: must be 1 to 600000", g.timeout_ms));
    }
    if (g.store == "memory") {
      store_ = std::make_unique<MemoryStore>(clock);
    } else {
      MemcachedOptions options;
      options.servers = Unwrap(ParseServers(g.servers));
      options.connect_timeout = std::chrono::milliseconds{g.timeout_ms};
      options.io_timeout = std::chrono::milliseconds{g.timeout_ms};
      store_ = Unwrap(MemcachedStore::Create(options));
    }
    EngineOptions options;
    options.name_space = g.name_space;
    Result<Seconds> retention = ParseDuration(g.retention);
    if (!retention.ok()) Fail(kUsage, "--retention: " + retention.error().message());
    options.retention = *retention;
    options.exact_retry_after = exact_retry_after;
    if (hot_path) {
      options.hot_path.bucket_cache_features = 100000;
      options.hot_path.blocked_cache_entries = 100000;
    } else {
      options.hot_path.bucket_cache_features = 0;
    }
    if (g.exact_cover) {
      options.hot_path.bounds = false;
      options.hot_path.bucket_cache_features = 0;
      options.hot_path.blocked_cache_entries = 0;
    }
    engine_.emplace(Unwrap(Engine::Create(*store_, clock, options)));
  }
  const Engine& engine() const { return *engine_; }
  const Store& store() const { return *store_; }
  // Waits for every fire-and-forget write to be answered; the writes memcached refused (0 on the
  // memory store).
  uint64_t Settle() {
    auto* memcached = dynamic_cast<MemcachedStore*>(store_.get());
    return memcached != nullptr ? memcached->Settle() : 0;
  }

 private:
  std::unique_ptr<Store> store_;
  std::optional<Engine> engine_;
};

std::optional<Instant> ParseAt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    Fail(kUsage, fmt::format("--at \"{}\": expected Unix seconds, e.g. --at 1431857103", text));
  }
  return FromUnix(value);
}

uint64_t CheckCost(int64_t cost) {
  if (cost < 1) Fail(kUsage, fmt::format("--cost {}: must be a whole number >= 1", cost));
  return static_cast<uint64_t>(cost);
}

void Print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// ---------------------------------------------------------------------------------------------
// hit

struct HitArgs {
  std::string event, feature, at;
  int64_t cost = 1;
};

int RunHit(const Globals& g, const HitArgs& a) {
  SystemClock clock;
  Runtime rt(g, clock);
  const std::optional<Instant> at = ParseAt(a.at);
  const Instant t = at.value_or(clock.Now());
  const Cost cost = Unwrap(rt.engine().Record(a.event, a.feature, CheckCost(a.cost), t));
  if (g.json) {
    Print(Dump({{"event", a.event},
                {"feature", a.feature},
                {"at", ToUnix(t)},
                {"cost", a.cost},
                {"keys_written", cost.keys_written},
                {"keys_read", cost.keys_read},
                {"round_trips", cost.round_trips}}) +
          "\n");
  } else {
    Print(fmt::format("recorded {} hit{} of {} {} at {}\n", a.cost, a.cost == 1 ? "" : "s", a.event,
                      a.feature, FormatTime(t)));
  }
  return kOk;
}

// ---------------------------------------------------------------------------------------------
// count

struct CountArgs {
  std::string event, feature, at;
  std::vector<std::string> windows;
};

std::vector<Window> ParseWindows(const std::vector<std::string>& specs) {
  std::vector<Window> windows;
  for (const std::string& spec : specs) {
    Result<Seconds> length = ParseDuration(spec);
    if (!length.ok()) Fail(kUsage, "--window: " + length.error().message());
    windows.push_back(*Window::Sliding(*length));
  }
  return windows;
}

std::string CountsText(const Counts& counts) {
  std::string out;
  for (const WindowCount& w : counts.windows) {
    out += fmt::format("  {:<6} {:>10}\n", w.window.ToString(), w.count);
  }
  return out;
}

int RunCount(const Globals& g, const CountArgs& a) {
  SystemClock clock;
  Runtime rt(g, clock);
  const std::vector<Window> windows = ParseWindows(
      a.windows.empty() ? std::vector<std::string>{"1s", "1m", "1h", "1d"} : a.windows);
  const Counts counts = Unwrap(rt.engine().Count(a.event, a.feature, windows, ParseAt(a.at)));
  if (g.json) {
    Print(Dump(CountsJson(a.event, a.feature, counts)) + "\n");
  } else {
    Print(fmt::format("{} {} at {}\n{}keys read {}, round trips {}\n", a.event, a.feature,
                      FormatTime(counts.at), CountsText(counts), counts.cost.keys_read,
                      counts.cost.round_trips));
  }
  return kOk;
}

// ---------------------------------------------------------------------------------------------
// check

struct CheckArgs {
  std::string event, feature, at, policy_file, mode;
  std::vector<std::string> limits;
  int64_t cost = 1;
};

// The policy a check or replay uses: from --limit specs, or the policy file's entry.
class PolicySource {
 public:
  PolicySource(const std::vector<std::string>& limits, const std::string& policy_file,
               const std::string& mode) {
    if (!limits.empty() && !policy_file.empty()) {
      Fail(kUsage, "give either --limit or --policy, not both");
    }
    if (!mode.empty() && mode != "admitted" && mode != "attempts") {
      Fail(kUsage, fmt::format("--mode {}: use admitted or attempts", mode));
    }
    if (!mode.empty())
      mode_ = mode == "admitted" ? CountingMode::kAdmitted : CountingMode::kAttempts;
    if (!policy_file.empty()) {
      file_ = Unwrap(PolicyFile::Load(policy_file));
    } else if (!limits.empty()) {
      for (const std::string& spec : limits) {
        std::vector<Limit> parsed = Unwrap(ParseLimits(spec));
        fixed_.limits.insert(fixed_.limits.end(), parsed.begin(), parsed.end());
      }
    }
  }
  bool empty() const { return !file_ && fixed_.limits.empty(); }
  Result<Policy> For(std::string_view event, std::string_view feature) const {
    Result<Policy> policy = file_ ? file_->For(event, feature) : Result<Policy>(fixed_);
    if (policy.ok() && mode_) policy->mode = *mode_;
    return policy;
  }

 private:
  std::optional<PolicyFile> file_;
  Policy fixed_;
  std::optional<CountingMode> mode_;
};

std::string DecisionText(std::string_view event, std::string_view feature, const Decision& d) {
  std::string out = fmt::format("{} {} {}", d.allowed ? "allowed" : "denied", event, feature);
  if (d.degraded) {
    out += fmt::format(" (degraded: {})", d.store_error->ToString());
  } else if (!d.allowed) {
    out += d.retry_after ? fmt::format(" (retry after {}s)", d.retry_after->count())
                         : std::string(" (never: the cost exceeds a limit)");
  }
  out += "\n";
  for (const LimitOutcome& o : d.limits) {
    // Counts settled by bounds are shown as the range the true count lies in.
    const std::string count =
        o.exact ? fmt::format("{}", o.count) : fmt::format("{}..{}", o.count_min, o.count);
    out += fmt::format("  {:<16} count {:>9}  remaining {:>6}{}\n", DescribeLimits({o.limit}),
                       count, o.remaining, o.exceeded ? "  exceeded" : "");
  }
  return out;
}

int RunCheck(const Globals& g, const CheckArgs& a) {
  const PolicySource source(a.limits, a.policy_file, a.mode);
  if (source.empty()) {
    Fail(kUsage, "no limits: give --limit N/DUR (e.g. --limit 5/m) or --policy FILE");
  }
  const Policy policy = Unwrap(source.For(a.event, a.feature));
  SystemClock clock;
  Runtime rt(g, clock, /*hot_path=*/false, /*exact_retry_after=*/true);  // one shot: be exact
  const Decision d =
      Unwrap(rt.engine().Check(a.event, a.feature, policy, CheckCost(a.cost), ParseAt(a.at)));
  Print(g.json ? Dump(DecisionJson(d)) + "\n" : DecisionText(a.event, a.feature, d));
  if (d.degraded) {
    std::fprintf(stderr, "hourglass: store unreachable, decision per policy (fail %s): %s\n",
                 std::string(FailureModeName(policy.on_store_failure)).c_str(),
                 d.store_error->message().c_str());
    return kUnavailable;
  }
  return d.allowed ? kOk : kDenied;
}

// ---------------------------------------------------------------------------------------------
// inspect

struct InspectArgs {
  std::string event, feature, at;
};

int RunInspect(const Globals& g, const InspectArgs& a) {
  SystemClock clock;
  Runtime rt(g, clock);
  const Engine& engine = rt.engine();
  const Ladder& ladder = engine.options().ladder;
  if (ladder.levels() < 3 || ladder.width(1) != Seconds{60} || ladder.width(2) != Seconds{3600}) {
    Fail(kUsage, "inspect needs the ladder 1s,1m,1h");
  }
  const Instant t = ParseAt(a.at).value_or(clock.Now());
  const int64_t now = ToUnix(t);
  // The last 60 seconds, the 60 minutes up to the current one, the 24 hours up to the current one.
  std::vector<Bucket> buckets;
  for (int64_t i = 59; i >= 0; --i) buckets.push_back(ladder.BucketAt(0, now - i));
  for (int64_t i = 59; i >= 0; --i) buckets.push_back(ladder.BucketAt(1, now - 60 * i));
  for (int64_t i = 23; i >= 0; --i) buckets.push_back(ladder.BucketAt(2, now - 3600 * i));
  const Engine::BucketValues read = Unwrap(engine.ReadBuckets(a.event, a.feature, buckets));
  const std::span<const uint64_t> all(read.values);
  const std::span<const uint64_t> seconds = all.subspan(0, 60), minutes = all.subspan(60, 60),
                                  hours = all.subspan(120, 24);
  const std::vector<Window> windows = ParseWindows({"1s", "1m", "1h", "1d"});
  const Counts counts = Unwrap(engine.Count(a.event, a.feature, windows, t));
  const uint64_t keys_read = read.cost.keys_read + counts.cost.keys_read;
  const uint64_t round_trips = read.cost.round_trips + counts.cost.round_trips;
  if (g.json) {
    json j = CountsJson(a.event, a.feature, counts);
    j["seconds"] = std::vector<uint64_t>(seconds.begin(), seconds.end());
    j["minutes"] = std::vector<uint64_t>(minutes.begin(), minutes.end());
    j["hours"] = std::vector<uint64_t>(hours.begin(), hours.end());
    j["keys_read"] = keys_read;
    j["round_trips"] = round_trips;
    Print(Dump(j) + "\n");
    return kOk;
  }
  const auto max_of = [](std::span<const uint64_t> v) {
    return *std::max_element(v.begin(), v.end());
  };
  const auto hhmm = [](int64_t s) { return FormatTimeOfDay(FromUnix(s), false); };
  const int64_t minute0 = (now / 60 - 59) * 60, hour0 = (now / 3600 - 23) * 3600;
  std::string out = fmt::format("{} {} at {}\n\n", a.event, a.feature, FormatTime(t));
  out += fmt::format("per second, {}..{}  (max {}/s)\n  {}\n",
                     FormatTimeOfDay(FromUnix(now - 59), true), FormatTimeOfDay(t, true),
                     max_of(seconds), Sparkline(seconds));
  out += fmt::format("per minute, {}..{}  (max {}/min)\n  {}\n", hhmm(minute0), hhmm(now),
                     max_of(minutes), Sparkline(minutes));
  out += fmt::format("per hour,   {}..{}  (max {}/h)\n  {}\n\n", hhmm(hour0), hhmm(now),
                     max_of(hours), Sparkline(hours));
  out += fmt::format("windows ending {}:\n", a.at.empty() ? "now" : "at " + FormatTime(t)) +
         CountsText(counts);
  out += fmt::format("keys read {}, round trips {}\n", keys_read, round_trips);
  Print(out);
  return kOk;
}

// ---------------------------------------------------------------------------------------------
// reset

struct ResetArgs {
  std::string event, feature, at;
};

int RunReset(const Globals& g, const ResetArgs& a) {
  SystemClock clock;
  Runtime rt(g, clock);
  const std::optional<Instant> at = ParseAt(a.at);
  const Cost cost = Unwrap(rt.engine().Reset(a.event, a.feature, at));
  const Instant around = at.value_or(clock.Now());
  if (g.json) {
    Print(Dump({{"event", a.event},
                {"feature", a.feature},
                {"around", ToUnix(around)},
                {"deleted", cost.keys_written},
                {"keys_read", cost.keys_read},
                {"round_trips", cost.round_trips}}) +
          "\n");
  } else {
    Print(fmt::format("reset {} {}: deleted {} bucket{} around {}\n", a.event, a.feature,
                      cost.keys_written, cost.keys_written == 1 ? "" : "s", FormatTime(around)));
  }
  return kOk;
}

// ---------------------------------------------------------------------------------------------
// replay

struct ReplayArgs {
  std::string file, format = "hits", event = "request", policy_file, mode;
  std::vector<std::string> limits;
  bool decisions = false;
  int top = 10;
};

std::vector<TraceHit> ReadTrace(const ReplayArgs& a, int64_t& out_of_order) {
  if (a.format != "hits" && a.format != "apache") {
    Fail(kUsage, fmt::format("--format {}: use hits or apache", a.format));
  }
  std::ifstream in(a.file);
  if (!in) Fail(kUsage, fmt::format("{}: cannot read the trace file", a.file));
  std::vector<TraceHit> hits;
  std::string line;
  int64_t number = 0;
  out_of_order = 0;
  while (std::getline(in, line)) {
    ++number;
    Result<std::optional<TraceHit>> hit =
        a.format == "hits" ? ParseHitsLine(line) : ParseApacheLine(line, a.event);
    if (!hit.ok()) Fail(kUsage, fmt::format("{}:{}: {}", a.file, number, hit.error().message()));
    if (!hit->has_value()) continue;
    (*hit)->line = number;
    if (!hits.empty() && (*hit)->at < hits.back().at) ++out_of_order;
    hits.push_back(std::move(**hit));
  }
  // Drive the clock forward only: replay in time order, keeping file order within a second.
  std::stable_sort(hits.begin(), hits.end(),
                   [](const TraceHit& x, const TraceHit& y) { return x.at < y.at; });
  return hits;
}

int RunReplay(const Globals& g, const ReplayArgs& a) {
  const PolicySource source(a.limits, a.policy_file, a.mode);
  int64_t out_of_order = 0;
  const std::vector<TraceHit> hits = ReadTrace(a, out_of_order);
  ManualClock clock(FromUnix(hits.empty() ? 0 : hits.front().at));
  Runtime rt(g, clock, /*hot_path=*/true);
  const Engine& engine = rt.engine();
  struct PerFeature {
    std::string event;
    uint64_t hits = 0, admitted = 0, denied = 0;
    int64_t last_at = 0;
  };
  std::unordered_map<std::string, PerFeature> features;
  uint64_t admitted = 0, denied = 0;
  Cost total;
  std::vector<uint64_t> keys_per_check;
  const auto started = std::chrono::steady_clock::now();
  // Line numbers for --decisions: the position of each hit in the file after sorting is not its
  // line, so number hits in replay order.
  int64_t index = 0;
  for (const TraceHit& hit : hits) {
    ++index;
    clock.Set(FromUnix(hit.at));
    PerFeature& f = features[hit.event + '\n' + hit.feature];
    f.event = hit.event;
    f.hits += hit.cost;
    f.last_at = hit.at;
    if (source.empty()) {
      total += Unwrap(engine.Record(hit.event, hit.feature, hit.cost));
      ++admitted;
      ++f.admitted;
      continue;
    }
    const Policy policy = Unwrap(source.For(hit.event, hit.feature));
    const Decision d = Unwrap(engine.Check(hit.event, hit.feature, policy, hit.cost));
    if (d.degraded) {
      Fail(kUnavailable, fmt::format("store unreachable at hit {} of {}: {}", index, a.file,
                                     d.store_error->message()));
    }
    total += d.cost;
    keys_per_check.push_back(d.cost.keys_read);
    (d.allowed ? admitted : denied)++;
    (d.allowed ? f.admitted : f.denied)++;
    if (a.decisions) {
      json j = DecisionJson(d);
      j["hit"] = index;      // position in replay (time) order
      j["line"] = hit.line;  // line in the file
      j["at"] = hit.at;
      j["event"] = hit.event;
      j["feature"] = hit.feature;
      Print(Dump(j) + "\n");
    }
  }
  // The last take-backs were sent without waiting: wait for them, so the time covers them and a
  // refused one is reported.
  const uint64_t unconfirmed = rt.Settle();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Top offenders: most denied, then most hits.
  std::vector<std::pair<std::string, PerFeature>> ranked(features.begin(), features.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
    return std::tie(x.second.denied, x.second.hits, x.first) >
           std::tie(y.second.denied, y.second.hits, y.first);
  });
  const auto busiest =
      std::max_element(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
        return std::tie(x.second.hits, y.first) < std::tie(y.second.hits, x.first);
      });
  const auto feature_of = [](const std::string& key) { return key.substr(key.find('\n') + 1); };
  json top = json::array();
  std::string top_text;
  for (int i = 0; i < a.top && i < static_cast<int>(ranked.size()); ++i) {
    const auto& [key, f] = ranked[static_cast<size_t>(i)];
    top.push_back({{"event", f.event},
                   {"feature", feature_of(key)},
                   {"hits", f.hits},
                   {"admitted", f.admitted},
                   {"denied", f.denied}});
    top_text += fmt::format("  {:<24} {:<16} {:>8} {:>9} {:>7}\n", feature_of(key), f.event, f.hits,
                            f.admitted, f.denied);
  }
  const uint64_t checks = admitted + denied;
  const auto per_check = [&](uint64_t v) {
    return checks == 0 ? 0.0 : static_cast<double>(v) / static_cast<double>(checks);
  };
  std::sort(keys_per_check.begin(), keys_per_check.end());
  const auto keys_at = [&](double q) -> uint64_t {
    if (keys_per_check.empty()) return 0;
    return keys_per_check[std::min(
        keys_per_check.size() - 1,
        static_cast<size_t>(q * static_cast<double>(keys_per_check.size())))];
  };
  json summary = {{"file", a.file},
                  {"lines", hits.size()},
                  {"sorted_lines", out_of_order},
                  {"checked", !source.empty()},
                  {"admitted", admitted},
                  {"denied", denied},
                  {"features", features.size()},
                  {"keys_read", total.keys_read},
                  {"keys_written", total.keys_written},
                  {"round_trips", total.round_trips},
                  {"cache_hits", total.cache_hits},
                  {"blocked_hits", total.blocked_hits},
                  {"keys_read_p50", keys_at(0.5)},
                  {"keys_read_p99", keys_at(0.99)},
                  {"unconfirmed_failures", unconfirmed},
                  {"seconds", seconds},
                  {"top", top}};
  if (busiest != ranked.end()) {
    summary["busiest"] = {{"event", busiest->second.event},
                          {"feature", feature_of(busiest->first)},
                          {"hits", busiest->second.hits},
                          {"last_at", busiest->second.last_at}};
  }
  if (g.json) {
    Print(Dump(summary) + "\n");
    return kOk;
  }
  std::string text = fmt::format(
      "replayed {} hits from {} ({} out of time order, replayed in time order) into {}\n",
      hits.size(), a.file, out_of_order, rt.store().Describe());
  if (!hits.empty()) {
    text += fmt::format("  from {} to {}\n", FormatTime(FromUnix(hits.front().at)),
                        FormatTime(FromUnix(hits.back().at)));
  }
  if (source.empty()) {
    text += fmt::format("recorded {} hits of {} features\n", admitted, features.size());
  } else {
    text += fmt::format(
        "admitted {}, denied {} ({:.1f}%), {} features\n", admitted, denied,
        checks == 0 ? 0.0 : 100.0 * static_cast<double>(denied) / static_cast<double>(checks),
        features.size());
    text += fmt::format("top offenders:\n  {:<24} {:<16} {:>8} {:>9} {:>7}\n{}", "feature", "event",
                        "hits", "admitted", "denied", top_text);
  }
  if (busiest != ranked.end()) {
    text += fmt::format("busiest: {} {} ({} hits, last at {})\n", busiest->second.event,
                        feature_of(busiest->first), busiest->second.hits, busiest->second.last_at);
  }
  text += fmt::format(
      "per check: {:.1f} keys read (median {}, p99 {}), {:.1f} keys written, {:.2f} round trips, "
      "{:.1f} cached buckets, {:.1f}% answered locally; {:.0f} checks/s\n",
      per_check(total.keys_read), keys_at(0.5), keys_at(0.99), per_check(total.keys_written),
      per_check(total.round_trips), per_check(total.cache_hits),
      100.0 * per_check(total.blocked_hits),
      seconds > 0 ? static_cast<double>(checks) / seconds : 0.0);
  if (unconfirmed > 0) {
    text += fmt::format(
        "warning: memcached refused {} fire-and-forget writes (take-backs or blocked attempts); "
        "counts in the store may be off by them\n",
        unconfirmed);
  }
  // With --decisions, stdout carries the JSON lines: the summary goes to stderr.
  if (a.decisions) {
    std::fputs(text.c_str(), stderr);
  } else {
    Print(text);
  }
  return kOk;
}

// ---------------------------------------------------------------------------------------------
// policy validate

int RunPolicyValidate(const Globals& g, const std::string& file) {
  const PolicyFile policies = Unwrap(PolicyFile::Load(file));
  if (g.json) {
    json events = json::object();
    for (const auto& [event, entry] : policies.events()) {
      json overrides = json::object();
      for (const auto& [feature, policy] : entry.overrides) {
        overrides[feature] = DescribeLimits(policy.limits);
      }
      events[event] = {{"limits", DescribeLimits(entry.policy.limits)},
                       {"mode", CountingModeName(entry.policy.mode)},
                       {"on_store_failure", FailureModeName(entry.policy.on_store_failure)},
                       {"overrides", overrides}};
    }
    Print(Dump({{"valid", true}, {"file", file}, {"events", events}}) + "\n");
  } else {
    Print(fmt::format("{}: valid\n{}", file, policies.Explain()));
  }
  return kOk;
}

// ---------------------------------------------------------------------------------------------

int Main(int argc, char** argv) {
  CLI::App app{
      "hourglass: exact hit counters in memcached, per event and feature, to the second.\n"
      "Counts hits in second/minute/hour buckets and answers any window exactly."};
  app.fallthrough();  // global options may follow the command
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 check denied, 2 bad usage or input, 3 store unreachable.\n"
      "Examples:\n"
      "  hourglass check url_shorten 203.0.113.7 --limit 2/s --limit 5/m --limit 100/d\n"
      "  hourglass count signup ann@example.com --window 1h --window 1d --json\n"
      "  hourglass replay access.log --format apache --policy policies/example.yaml\n"
      "Run 'hourglass COMMAND --help' for a command's options and examples.");
  Globals g;
  if (const char* env = std::getenv("HOURGLASS_SERVERS"); env != nullptr && *env != '\0') {
    g.servers = env;
  }
  app.add_option("--servers", g.servers,
                 "memcached servers host:port[,host:port...] (env HOURGLASS_SERVERS)")
      ->capture_default_str();
  app.add_option("--store", g.store, "memcached, or memory (in-process; for replay)")
      ->check(CLI::IsMember({"memcached", "memory"}))
      ->capture_default_str();
  app.add_option("--namespace", g.name_space, "first part of every key")->capture_default_str();
  app.add_flag("--json", g.json, "machine-readable output on stdout");
  app.add_option("--timeout-ms", g.timeout_ms, "connect and I/O timeout per server")
      ->capture_default_str();
  app.add_option("--retention", g.retention,
                 "longest window answered; sets bucket TTLs (same on every client)")
      ->capture_default_str();
  app.add_flag("--exact-cover", g.exact_cover,
               "no hot path: every check reads its window's exact cover (for comparison)");
  for (CLI::Option* option : app.get_options()) {
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
  }

  const auto add_feature = [](CLI::App* sub, std::string& event, std::string& feature) {
    sub->add_option("event", event, "event, e.g. url_shorten")->required();
    sub->add_option("feature", feature,
                    "feature (any bytes), e.g. a client IP; use -- before "
                    "one that starts with '-'")
        ->required();
  };
  const auto add_at = [](CLI::App* sub, std::string& at, const char* what) {
    sub->add_option("--at", at, what);
  };

  HitArgs hit;
  CLI::App* hit_cmd = app.add_subcommand("hit", "Record a hit");
  add_feature(hit_cmd, hit.event, hit.feature);
  hit_cmd->add_option("--cost", hit.cost, "how many hits this one counts for")
      ->capture_default_str();
  add_at(hit_cmd, hit.at, "record at UNIX_SECONDS instead of now");
  hit_cmd->footer(
      "Examples:\n"
      "  hourglass hit signup ann@example.com\n"
      "  hourglass hit url_shorten 203.0.113.7 --cost 3 --at 1431857103");

  CountArgs count;
  CLI::App* count_cmd = app.add_subcommand("count", "Exact hits in sliding windows");
  add_feature(count_cmd, count.event, count.feature);
  count_cmd->add_option(
      "--window", count.windows,
      "window length (s, m, h, d: 1d, 10m, 90s), repeatable; default 1s 1m 1h 1d");
  add_at(count_cmd, count.at,
         "windows ending at UNIX_SECONDS (default now); exact in the past too");
  count_cmd->footer(
      "Examples:\n"
      "  hourglass count url_shorten 203.0.113.7\n"
      "  hourglass count signup ann@example.com --window 10m --window 1d --json\n"
      "  hourglass count request 66.249.73.135 --at 1431907000");

  CheckArgs check;
  CLI::App* check_cmd =
      app.add_subcommand("check", "Check a hit against limits and record it per the mode");
  add_feature(check_cmd, check.event, check.feature);
  check_cmd->add_option("--limit", check.limits, "N/DUR sliding limit, repeatable (e.g. 5/m)");
  check_cmd->add_option("--policy", check.policy_file, "YAML policy file; uses the event's entry");
  check_cmd->add_option("--mode", check.mode, "admitted (denied hits do not count) or attempts");
  check_cmd->add_option("--cost", check.cost, "how many hits this one counts for")
      ->capture_default_str();
  add_at(check_cmd, check.at, "check at UNIX_SECONDS instead of now");
  check_cmd->footer(
      "Exit code 0 allowed, 1 denied, 3 store unreachable (decision per the policy's failure "
      "mode).\n"
      "Examples:\n"
      "  hourglass check url_shorten 203.0.113.7 --limit 2/s --limit 5/m --limit 10/h --limit "
      "100/d\n"
      "  hourglass check signup ann@example.com --policy policies/example.yaml --json\n"
      "  hourglass check login mallory --limit 5/10m --mode attempts");

  InspectArgs inspect;
  CLI::App* inspect_cmd =
      app.add_subcommand("inspect", "Show a feature's buckets as timelines, and its windows");
  add_feature(inspect_cmd, inspect.event, inspect.feature);
  add_at(inspect_cmd, inspect.at, "inspect at UNIX_SECONDS instead of now");
  inspect_cmd->footer(
      "Examples:\n"
      "  hourglass inspect url_shorten 203.0.113.7\n"
      "  hourglass inspect request 66.249.73.135 --at 1431907000 --json");

  ResetArgs reset;
  CLI::App* reset_cmd =
      app.add_subcommand("reset", "Delete every bucket of an event+feature: all windows read 0");
  add_feature(reset_cmd, reset.event, reset.feature);
  add_at(reset_cmd, reset.at, "reset the buckets alive around UNIX_SECONDS (replayed hits)");
  reset_cmd->footer(
      "Examples:\n"
      "  hourglass reset signup ann@example.com\n"
      "  hourglass reset request 66.249.73.135 --at 1431907000");

  ReplayArgs replay;
  CLI::App* replay_cmd = app.add_subcommand(
      "replay", "Drive the engine with a trace's timestamps (a manual clock), in time order");
  replay_cmd->add_option("file", replay.file, "trace file")->required();
  replay_cmd
      ->add_option("--format", replay.format,
                   "hits (UNIX_SECONDS<TAB>EVENT<TAB>FEATURE[<TAB>COST]) or apache")
      ->capture_default_str();
  replay_cmd->add_option("--event", replay.event, "event name for apache lines")
      ->capture_default_str();
  replay_cmd->add_option("--limit", replay.limits, "N/DUR sliding limit, repeatable");
  replay_cmd->add_option("--policy", replay.policy_file, "YAML policy file");
  replay_cmd->add_option("--mode", replay.mode, "admitted or attempts (overrides the policy)");
  replay_cmd->add_flag("--decisions", replay.decisions, "one JSON line per hit on stdout");
  replay_cmd->add_option("--top", replay.top, "how many top offenders to list")
      ->capture_default_str();
  replay_cmd->footer(
      "Without limits every hit is recorded; with --limit or --policy each is checked.\n"
      "Examples:\n"
      "  hourglass --store memory replay trace.tsv --limit 2/s --limit 100/d\n"
      "  hourglass replay access.log --format apache --policy policies/example.yaml\n"
      "  hourglass --store memory replay access.log --format apache --limit 5/m --decisions");

  std::string policy_path;
  CLI::App* policy_cmd = app.add_subcommand("policy", "Work with policy files");
  policy_cmd->require_subcommand(1);
  CLI::App* validate_cmd =
      policy_cmd->add_subcommand("validate", "Parse and explain a policy file");
  validate_cmd->add_option("file", policy_path, "YAML policy file")->required();
  validate_cmd->footer(
      "Exit code 0 valid, 2 invalid (the error names the line).\n"
      "Examples:\n"
      "  hourglass policy validate policies/example.yaml");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (const std::vector<std::string> rest = app.remaining(); !rest.empty()) {
      message = fmt::format(
          "unknown command or argument \"{}\" (commands: hit, count, check, "
          "inspect, reset, replay, policy)",
          rest.front());
    }
    std::fprintf(stderr, "hourglass: %s\nRun 'hourglass --help' for usage.\n", message.c_str());
    return kUsage;
  }

  try {
    if (hit_cmd->parsed()) return RunHit(g, hit);
    if (count_cmd->parsed()) return RunCount(g, count);
    if (check_cmd->parsed()) return RunCheck(g, check);
    if (inspect_cmd->parsed()) return RunInspect(g, inspect);
    if (reset_cmd->parsed()) return RunReset(g, reset);
    if (replay_cmd->parsed()) return RunReplay(g, replay);
    if (validate_cmd->parsed()) return RunPolicyValidate(g, policy_path);
  } catch (const Exit& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "hourglass: %s\n", e.message.c_str());
    return e.code;
  }
  return kUsage;
}

}  // namespace
}  // namespace hourglass::cli

int main(int argc, char** argv) { return hourglass::cli::Main(argc, argv); }
