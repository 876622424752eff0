// hourglass replay FILE [--format hits|apache] [--limit ...|--policy FILE] [--decisions]: drives
// the engine with the trace's timestamps on a manual clock, in time order.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <unordered_map>

#include "../commands.h"
#include "../policy_args.h"
#include "../render.h"
#include "../runtime.h"
#include "../trace.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

struct ReplayArgs {
  PolicyArgs policy;
  std::string file, format = "hits", event = "request";
  bool decisions = false;
  int top = 10;
  int batch = 256;  // hits of one second checked together (Engine::CheckMany)
};

struct PerFeature {
  std::string key;  // event '\n' feature: the order of ties
  std::string event, feature;
  uint64_t hits = 0, admitted = 0, denied = 0;
  int64_t first_at = 0, last_at = 0;                // its first and last hit
  int64_t first_denied_at = 0, last_denied_at = 0;  // its first and last denial (0: none)
};

// What a replay did, hit by hit.
class ReplayTally {
 public:
  PerFeature& Feature(const TraceHit& hit) {
    std::string key = hit.event + '\n' + hit.feature;
    PerFeature& f = features_[key];
    f.key = std::move(key);
    f.event = hit.event;
    f.feature = hit.feature;
    if (f.hits == 0) f.first_at = hit.at;
    f.hits += hit.cost;
    f.last_at = hit.at;
    return f;
  }
  void Recorded(PerFeature& f, const Cost& cost) {
    total += cost;
    ++admitted;
    ++f.admitted;
  }
  void Checked(PerFeature& f, const Decision& d) {
    total += d.cost;
    keys_per_check_.push_back(d.cost.keys_read);
    (d.allowed ? admitted : denied)++;
    (d.allowed ? f.admitted : f.denied)++;
    if (d.allowed) return;
    if (f.first_denied_at == 0) f.first_denied_at = ToUnix(d.at);
    f.last_denied_at = ToUnix(d.at);
  }
  // Most denied first, then most hits.
  std::vector<PerFeature> Ranked() const;
  std::optional<PerFeature> Busiest() const;
  size_t features() const { return features_.size(); }
  uint64_t checks() const { return admitted + denied; }
  double PerCheck(uint64_t v) const {
    return checks() == 0 ? 0.0 : static_cast<double>(v) / static_cast<double>(checks());
  }
  // Keys read per check at quantile q.
  uint64_t KeysAt(double q);

  uint64_t admitted = 0, denied = 0, unconfirmed = 0;
  uint64_t batches = 0;  // Engine::CheckMany calls
  Cost total;
  double seconds = 0;

 private:
  std::unordered_map<std::string, PerFeature> features_;
  std::vector<uint64_t> keys_per_check_;
  bool sorted_ = false;
};

std::vector<PerFeature> ReplayTally::Ranked() const {
  std::vector<PerFeature> ranked;
  for (const auto& [key, f] : features_) ranked.push_back(f);
  std::sort(ranked.begin(), ranked.end(), [](const PerFeature& x, const PerFeature& y) {
    return std::tie(x.denied, x.hits, x.key) > std::tie(y.denied, y.hits, y.key);
  });
  return ranked;
}

std::optional<PerFeature> ReplayTally::Busiest() const {
  std::optional<PerFeature> busiest;  // most hits; the first key among equals
  for (const auto& [key, f] : features_) {
    if (!busiest || std::tie(f.hits, busiest->key) > std::tie(busiest->hits, f.key)) busiest = f;
  }
  return busiest;
}

uint64_t ReplayTally::KeysAt(double q) {
  if (keys_per_check_.empty()) return 0;
  if (!sorted_) std::sort(keys_per_check_.begin(), keys_per_check_.end());
  sorted_ = true;
  const size_t at = static_cast<size_t>(q * static_cast<double>(keys_per_check_.size()));
  return keys_per_check_[std::min(keys_per_check_.size() - 1, at)];
}

void PrintDecision(const Decision& d, const TraceHit& hit, int64_t index) {
  nlohmann::json j = DecisionJson(d);
  j["hit"] = index;      // position in replay (time) order
  j["line"] = hit.line;  // line in the file
  j["at"] = hit.at;
  j["event"] = hit.event;
  j["feature"] = hit.feature;
  Print(Dump(j) + "\n");
}

// Checks hits[first, last), all of one second, as one batch: exactly as one by one.
void CheckBatch(const ReplayArgs& a, std::span<const TraceHit> hits, int64_t first_index,
                const PolicySource& source, const Engine& engine, ReplayTally& tally) {
  std::vector<Resolved> resolved;
  resolved.reserve(hits.size());
  for (const TraceHit& hit : hits) {
    Result<Resolved> r = source.Resolve(hit.event, hit.feature);
    if (!r.ok())
      Fail(CodeFor(r.error()),
           fmt::format("{} line {}: {}", a.file, hit.line, r.error().message()));
    resolved.push_back(std::move(*r));
  }
  std::vector<Engine::CheckRequest> checks;
  for (size_t i = 0; i < hits.size(); ++i) {
    checks.emplace_back(hits[i].event, resolved[i].feature, resolved[i].policy, hits[i].cost);
  }
  std::vector<Result<Decision>> decisions = engine.CheckMany(checks);
  ++tally.batches;
  for (size_t i = 0; i < hits.size(); ++i) {
    const int64_t index = first_index + static_cast<int64_t>(i);
    const Decision d = Unwrap(std::move(decisions[i]));
    if (d.degraded) {
      Fail(kUnavailable, fmt::format("store failed at hit {} of {}: {}", index, a.file,
                                     d.store_error->ToString()));
    }
    tally.Checked(tally.Feature(hits[i]), d);
    if (a.decisions) PrintDecision(d, hits[i], index);
  }
}

// Replays every hit: recorded when there are no limits, checked otherwise. Checks of one second
// go in batches of up to a.batch: their decisions are those of checks one by one, in order.
void ReplayHits(const ReplayArgs& a, const Trace& trace, const PolicySource& source,
                ManualClock& clock, const Engine& engine, ReplayTally& tally) {
  const std::vector<TraceHit>& hits = trace.hits;
  for (size_t i = 0; i < hits.size();) {
    clock.Set(FromUnix(hits[i].at));
    if (source.empty()) {
      tally.Recorded(tally.Feature(hits[i]),
                     Unwrap(engine.Record(hits[i].event, hits[i].feature, hits[i].cost)));
      ++i;
      continue;
    }
    size_t end = i + 1;  // hits are numbered from 1 in replay order
    while (end < hits.size() && hits[end].at == hits[i].at &&
           end - i < static_cast<size_t>(a.batch)) {
      ++end;
    }
    CheckBatch(a, std::span(hits).subspan(i, end - i), static_cast<int64_t>(i) + 1, source, engine,
               tally);
    i = end;
  }
}

nlohmann::json SummaryJson(const ReplayArgs& a, const Trace& trace, bool checked,
                           ReplayTally& tally) {
  nlohmann::json top = nlohmann::json::array();
  const std::vector<PerFeature> ranked = tally.Ranked();
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(std::max(a.top, 0)); ++i) {
    const PerFeature& f = ranked[i];
    top.push_back({{"event", f.event},
                   {"feature", f.feature},
                   {"hits", f.hits},
                   {"admitted", f.admitted},
                   {"denied", f.denied}});
  }
  nlohmann::json summary = {{"file", a.file},
                            {"lines", trace.hits.size()},
                            {"sorted_lines", trace.out_of_order},
                            {"checked", checked},
                            {"admitted", tally.admitted},
                            {"denied", tally.denied},
                            {"features", tally.features()},
                            {"keys_read", tally.total.keys_read},
                            {"keys_written", tally.total.keys_written},
                            {"round_trips", tally.total.round_trips},
                            {"batches", tally.batches},
                            {"cache_hits", tally.total.cache_hits},
                            {"blocked_hits", tally.total.blocked_hits},
                            {"keys_read_p50", tally.KeysAt(0.5)},
                            {"keys_read_p99", tally.KeysAt(0.99)},
                            {"unconfirmed_failures", tally.unconfirmed},
                            {"seconds", tally.seconds},
                            {"top", top}};
  if (!ranked.empty() && ranked.front().denied > 0) {
    const PerFeature& f = ranked.front();
    summary["most_denied"] = {{"event", f.event},
                              {"feature", f.feature},
                              {"hits", f.hits},
                              {"denied", f.denied},
                              {"first_at", f.first_at},
                              {"last_at", f.last_at},
                              {"first_denied_at", f.first_denied_at},
                              {"last_denied_at", f.last_denied_at}};
  }
  if (const std::optional<PerFeature> busiest = tally.Busiest()) {
    summary["busiest"] = {{"event", busiest->event},
                          {"feature", busiest->feature},
                          {"hits", busiest->hits},
                          {"last_at", busiest->last_at}};
  }
  return summary;
}

std::string OffendersText(const ReplayArgs& a, const ReplayTally& tally) {
  std::string text = fmt::format("top offenders:\n  {:<24} {:<16} {:>8} {:>9} {:>7}\n", "feature",
                                 "event", "hits", "admitted", "denied");
  const std::vector<PerFeature> ranked = tally.Ranked();
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(std::max(a.top, 0)); ++i) {
    const PerFeature& f = ranked[i];
    text += fmt::format("  {:<24} {:<16} {:>8} {:>9} {:>7}\n", DisplayText(f.feature, 64),
                        DisplayText(f.event, 64), f.hits, f.admitted, f.denied);
  }
  return text;
}

std::string SummaryText(const ReplayArgs& a, const Trace& trace, bool checked, const Store& store,
                        ReplayTally& tally) {
  std::string text = fmt::format(
      "replayed {} hits from {} ({} out of time order, replayed in time order) into {}\n",
      trace.hits.size(), DisplayText(a.file), trace.out_of_order, store.Describe());
  if (!trace.hits.empty()) {
    text += fmt::format("  from {} to {}\n", FormatTime(FromUnix(trace.hits.front().at)),
                        FormatTime(FromUnix(trace.hits.back().at)));
  }
  if (!checked) {
    text += fmt::format("recorded {} hits of {} features\n", tally.admitted, tally.features());
  } else {
    text += fmt::format("admitted {}, denied {} ({:.1f}%), {} features\n", tally.admitted,
                        tally.denied, 100.0 * tally.PerCheck(tally.denied), tally.features());
    text += OffendersText(a, tally);
    if (const std::vector<PerFeature> ranked = tally.Ranked();
        !ranked.empty() && ranked.front().denied > 0) {
      const PerFeature& f = ranked.front();
      text += fmt::format(
          "most denied: {} {} ({} of {} hits denied; hits from {} to {}, denied from {} to {})\n",
          DisplayText(f.event), DisplayText(f.feature), f.denied, f.hits,
          FormatTime(FromUnix(f.first_at)), FormatTime(FromUnix(f.last_at)),
          FormatTime(FromUnix(f.first_denied_at)), FormatTime(FromUnix(f.last_denied_at)));
    }
  }
  if (const std::optional<PerFeature> busiest = tally.Busiest()) {
    text += fmt::format("busiest: {} {} ({} hits, last at {})\n", DisplayText(busiest->event),
                        DisplayText(busiest->feature), busiest->hits, busiest->last_at);
  }
  const Cost& total = tally.total;
  text += fmt::format(
      "per check: {:.1f} keys read (median {}, p99 {}), {:.1f} keys written, {:.2f} round trips, "
      "{:.1f} cached buckets, {:.1f}% answered locally; {:.0f} checks/s\n",
      tally.PerCheck(total.keys_read), tally.KeysAt(0.5), tally.KeysAt(0.99),
      tally.PerCheck(total.keys_written), tally.PerCheck(total.round_trips),
      tally.PerCheck(total.cache_hits), 100.0 * tally.PerCheck(total.blocked_hits),
      tally.seconds > 0 ? static_cast<double>(tally.checks()) / tally.seconds : 0.0);
  if (tally.unconfirmed > 0) {
    text += fmt::format(
        "warning: the store refused {} fire-and-forget writes (take-backs or blocked attempts); "
        "counts in the store may be off by them\n",
        tally.unconfirmed);
  }
  return text;
}

int RunReplay(const Globals& g, const ReplayArgs& a) {
  const PolicySource source = OpenPolicySource(a.policy);
  const Trace trace = Unwrap(ReadTrace(a.file, a.format, a.event));
  ManualClock clock(FromUnix(trace.hits.empty() ? 0 : trace.hits.front().at));
  Runtime rt(g, clock, EngineUse::kLongRunning);
  ReplayTally tally;
  const auto started = std::chrono::steady_clock::now();
  ReplayHits(a, trace, source, clock, rt.engine(), tally);
  // The last take-backs were sent without waiting: wait for them, so the time covers them and a
  // refused one is reported.
  tally.unconfirmed = rt.Flush();
  tally.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (g.json) {
    Print(Dump(SummaryJson(a, trace, !source.empty(), tally)) + "\n");
    return kOk;
  }
  const std::string text = SummaryText(a, trace, !source.empty(), rt.store(), tally);
  // With --decisions, stdout carries the JSON lines: the summary goes to stderr.
  if (a.decisions) {
    std::fputs(text.c_str(), stderr);
  } else {
    Print(text);
  }
  return kOk;
}

}  // namespace

Command AddReplayCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* sub = app.add_subcommand(
      "replay", "Drive the engine with a trace's timestamps (a manual clock), in time order");
  sub->add_option("file", args->file, "trace file")->required();
  sub->add_option("--format", args->format,
                  "hits (UNIX_SECONDS<TAB>EVENT<TAB>FEATURE[<TAB>COST]) or apache")
      ->capture_default_str();
  sub->add_option("--event", args->event, "event name for apache lines")->capture_default_str();
  AddPolicyArgs(sub, args->policy);
  sub->add_flag("--decisions", args->decisions, "one JSON line per hit on stdout");
  sub->add_option("--top", args->top, "how many top offenders to list")->capture_default_str();
  sub->add_option("--batch", args->batch,
                  "check up to N hits of one second together, sharing round trips "
                  "(decisions are those of one by one; 1: one at a time)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  sub->footer(
      "Without limits every hit is recorded; with --limit or --policy each is checked.\n"
      "Examples:\n"
      "  hourglass --store memory replay trace.tsv --limit 2/s --limit 100/d\n"
      "  hourglass replay access.log --format apache --policy policies/example.yaml\n"
      "  hourglass --store memory replay access.log --format apache --limit 5/m --decisions");
  return {sub, [&g, args] { return RunReplay(g, *args); }};
}

}  // namespace hourglass::cli
