// Accuracy benchmark: replays traces through hourglass and the peers' algorithms side by side,
// each keeping its own state, and measures against each limiter's own admitted hits:
//
// - over-admissions:  admitted requests that pushed that limiter's admitted hits in some sliding
//                     window above its limit (the harm a limiter exists to prevent);
// - needless denials: denied requests that would not have pushed its admitted hits in any
//                     sliding window above its limit;
// - count error:      the limiter's estimate of each window against the exact count (mean, max);
// - keys read and written per decision, and stored keys at the peak.
//
// hourglass must show zero in all three error columns on every trace; the program exits 1 if it
// does not (a bug in the engine, not a number to report).
//
// With --audit-dir, every limiter's decisions are also written as `hourglass serve --audit-log`
// writes them (one file per trace, policy and limiter, and manifest.csv naming each with this
// benchmark's own figures), so that `hourglass audit` judges the peers as it judges production
// (bench/audit_peers.py compares the two).
//
//   accuracy --out bench/results [--apache FILE] [--start-memcached | --servers HOST:PORT]
//   [--quick] [--audit-dir DIR]
#include <fmt/format.h>
#include <fmt/os.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "../cli/trace.h"
#include "guarded_main.h"
#include "hourglass/audit_record.h"
#include "hourglass/memcached_store.h"
#include "hourglass/memory_store.h"
#include "hourglass/store_factory.h"
#include "limiters.h"
#include "memcached_server.h"
#include "redis_server.h"

namespace hourglass::bench {
namespace {

struct Trace {
  std::string name;
  std::vector<Request> requests;  // in time order
};

constexpr int64_t kDay = 86400;
constexpr int64_t kEpoch =
    1'431'820'800;  // 2015-05-17 00:00 UTC: every synthetic trace starts here

// Steady Poisson traffic: each feature with its own rate, log-uniform from 1/h to 1/min (24 to
// 1,440 a day: around the 100/d limit, so that limiters have decisions to get right).
Trace Poisson(uint32_t features, int64_t seconds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Trace trace{"poisson", {}};
  for (uint32_t f = 0; f < features; ++f) {
    const double rate = std::exp(
        std::uniform_real_distribution<double>(std::log(1.0 / 3600), std::log(1.0 / 60))(rng));
    std::exponential_distribution<double> gap(rate);
    for (double t = gap(rng); t < static_cast<double>(seconds); t += gap(rng)) {
      trace.requests.push_back({kEpoch + static_cast<int64_t>(t), f, 1});
    }
  }
  return trace;
}

// On/off bursts: 3 requests/s for 20-120 s, then silence for ~30 min on average.
Trace Bursts(uint32_t features, int64_t seconds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Trace trace{"bursts", {}};
  std::exponential_distribution<double> off(1.0 / 1800);
  for (uint32_t f = 0; f < features; ++f) {
    double t = off(rng);
    while (t < static_cast<double>(seconds)) {
      const int64_t length = 20 + static_cast<int64_t>(rng() % 100);
      for (int64_t s = 0; s < length; ++s) {
        for (int k = 0; k < 3; ++k)
          trace.requests.push_back({kEpoch + static_cast<int64_t>(t) + s, f, 1});
      }
      t += static_cast<double>(length) + off(rng);
    }
  }
  return trace;
}

// Seed 002's boundary attack: a limit-sized burst at the end of one window and another at the
// start of the next. Around every hour boundary, 2 requests/s for 15 s on each side; around every
// day boundary, 100 requests in the last second and 100 in the first.
Trace Boundary(uint32_t features, int64_t seconds) {
  Trace trace{"boundary attack", {}};
  for (uint32_t f = 0; f < features; ++f) {
    for (int64_t h = 3600; h < seconds; h += 3600) {
      if (h % kDay == 0) {
        for (int k = 0; k < 100; ++k) trace.requests.push_back({kEpoch + h - 1, f, 1});
        for (int k = 0; k < 100; ++k) trace.requests.push_back({kEpoch + h, f, 1});
        continue;
      }
      for (int64_t s = h - 15; s < h + 15; ++s) {
        trace.requests.push_back({kEpoch + s, f, 1});
        trace.requests.push_back({kEpoch + s, f, 1});
      }
    }
  }
  return trace;
}

// Multi-day diurnal traffic: Poisson with a rate that follows the time of day.
Trace Diurnal(uint32_t features, int64_t seconds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Trace trace{"diurnal", {}};
  for (uint32_t f = 0; f < features; ++f) {
    const double peak = std::exp(
        std::uniform_real_distribution<double>(std::log(1.0 / 1800), std::log(1.0 / 30))(rng));
    std::exponential_distribution<double> gap(peak);
    for (double t = gap(rng); t < static_cast<double>(seconds); t += gap(rng)) {
      const double phase = 2 * M_PI * std::fmod(t, kDay) / kDay;
      if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.5 * (1 - std::cos(phase))) {
        trace.requests.push_back({kEpoch + static_cast<int64_t>(t), f, 1});
      }
    }
  }
  return trace;
}

Trace Apache(const std::string& path) {
  Trace trace{"apache log (real)", {}};
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::map<std::string, uint32_t> ids;
  std::string line;
  while (std::getline(in, line)) {
    Result<std::optional<cli::TraceHit>> hit = cli::ParseApacheLine(line, "request");
    if (!hit.ok() || !hit->has_value()) continue;
    const uint32_t id =
        ids.emplace((*hit)->feature, static_cast<uint32_t>(ids.size())).first->second;
    trace.requests.push_back({(*hit)->at, id, 1});
  }
  return trace;
}

void Sort(Trace& trace) {
  std::stable_sort(trace.requests.begin(), trace.requests.end(),
                   [](const Request& a, const Request& b) { return a.t < b.t; });
}

// A limiter's own admitted hits per feature, answering exact sliding-window counts.
class AdmittedLog {
 public:
  uint64_t Window(uint32_t feature, int64_t t, int64_t w) const {
    auto it = logs_.find(feature);
    if (it == logs_.end()) return 0;
    const Log& log = it->second;
    const auto first = std::lower_bound(log.times.begin(), log.times.end(), t - w + 1);
    const size_t i = static_cast<size_t>(first - log.times.begin());
    return log.cum.back() - (i == 0 ? 0 : log.cum[i - 1]) - 0;
  }
  void Add(uint32_t feature, int64_t t, uint64_t cost) {
    Log& log = logs_[feature];
    log.times.push_back(t);
    log.cum.push_back((log.cum.empty() ? 0 : log.cum.back()) + cost);
  }

 private:
  struct Log {
    std::vector<int64_t> times;
    std::vector<uint64_t> cum;
  };
  std::unordered_map<uint32_t, Log> logs_;
};

struct Metrics {
  uint64_t requests = 0, admitted = 0, denied = 0, over = 0, needless = 0;
  double error_sum = 0, error_max = 0;
  uint64_t error_n = 0;
  double keys_read = 0, keys_written = 0;
  uint64_t stored_peak = 0;
};

struct Sample {
  int64_t t;
  double estimate;  // the limiter's estimate before the request
  double exact;     // the exact count of its admitted hits after the decision
};

// A decision of the replay as an audit line: the limiter's counts (its estimate, with the hit
// when admitted) of the policy's sliding windows, exact where it reports no range.
std::string AuditLineOf(const Request& r, const std::vector<Limit>& limits, bool admitted,
                        const std::vector<double>& estimates, const std::vector<double>& lows) {
  AuditRecord record;
  record.at = r.t;
  record.event = "request";
  record.feature = std::to_string(r.feature);
  record.hits = r.cost;
  record.allowed = record.request_allowed = record.recorded = admitted;
  const uint64_t added = admitted ? r.cost : 0;
  for (size_t i = 0; i < limits.size(); ++i) {
    const auto count = static_cast<uint64_t>(std::llround(std::max(0.0, estimates[i])));
    const auto low = static_cast<uint64_t>(std::llround(std::max(0.0, lows[i])));
    record.limits.push_back(
        AuditLimit{limits[i], true, count + added, std::min(low, count) + added, low == count});
  }
  return AuditLine(record);
}

Metrics Replay(const Trace& trace, const std::vector<Limit>& limits, Limiter& limiter,
               std::vector<Sample>* samples, uint32_t sample_feature, size_t sample_limit,
               std::ofstream* audit = nullptr) {
  Metrics m;
  AdmittedLog log;
  std::vector<double> estimates(limits.size()), lows(limits.size());
  const size_t every = std::max<size_t>(1, trace.requests.size() / 40);
  for (size_t n = 0; n < trace.requests.size(); ++n) {
    const Request& r = trace.requests[n];
    bool fits = true;
    std::vector<uint64_t> truth(limits.size());
    for (size_t i = 0; i < limits.size(); ++i) {
      truth[i] = log.Window(r.feature, r.t, limits[i].window.length().count());
      fits = fits && truth[i] + r.cost <= limits[i].max_hits;
    }
    std::fill(lows.begin(), lows.end(), std::nan(""));
    const bool admitted = limiter.Decide(r, estimates, lows);
    for (size_t i = 0; i < limits.size(); ++i) {
      if (std::isnan(lows[i])) lows[i] = estimates[i];
      // The distance from the truth to what the limiter believed possible.
      const double t = static_cast<double>(truth[i]);
      const double error = t < lows[i] ? lows[i] - t : t > estimates[i] ? t - estimates[i] : 0.0;
      m.error_sum += error;
      m.error_max = std::max(m.error_max, error);
      ++m.error_n;
    }
    if (audit != nullptr) *audit << AuditLineOf(r, limits, admitted, estimates, lows) << '\n';
    if (samples != nullptr && r.feature == sample_feature) {
      samples->push_back({r.t, estimates[sample_limit],
                          static_cast<double>(truth[sample_limit] + (admitted ? r.cost : 0))});
    }
    ++m.requests;
    if (admitted) {
      ++m.admitted;
      m.over += fits ? 0 : 1;
      log.Add(r.feature, r.t, r.cost);
    } else {
      ++m.denied;
      m.needless += fits ? 1 : 0;
    }
    if (n % every == 0 || n + 1 == trace.requests.size()) {
      m.stored_peak = std::max(m.stored_peak, limiter.StoredKeys(r.t));
    }
  }
  m.keys_read = static_cast<double>(limiter.keys_read) /
                static_cast<double>(std::max<uint64_t>(1, m.requests));
  m.keys_written = static_cast<double>(limiter.keys_written) /
                   static_cast<double>(std::max<uint64_t>(1, m.requests));
  return m;
}

struct Options {
  std::string out = "bench/results";
  std::string apache;
  std::string servers;
  bool start_memcached = false;
  bool start_redis = false;  // also hourglass on a Redis started on loopback (real log only)
  bool lmdb = false;         // also hourglass on an LMDB file in a temporary directory (same)
  bool quick = false;
  std::string audit_dir;  // "": no audit logs
};

// "boundary attack" / "2/s, 5/m" / "fixed window (envoy)" -> "boundary-attack-2-s-5-m-fixed-...".
std::string Slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (keep) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!keep && !out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

// hourglass on another store for one replay of the real log: Redis (flushed first) or a fresh
// LMDB directory, the store on the real clock as a server's would be.
struct OtherStore {
  std::string name;
  std::string url;
  std::function<uint64_t()> keys;  // the keys the store holds now
};

int Main(Options o) {
  std::unique_ptr<testing::MemcachedServer> server;
  if (o.start_memcached) {
    server = std::make_unique<testing::MemcachedServer>();
    if (!server->running()) throw std::runtime_error("cannot start memcached: " + server->error());
    o.servers = server->address();
  }

  std::unique_ptr<testing::RedisServer> redis;
  if (o.start_redis) {
    redis = std::make_unique<testing::RedisServer>();
    if (!redis->running()) throw std::runtime_error("cannot start redis: " + redis->error());
  }
  std::string lmdb_root;
  if (o.lmdb) {
    char dir[] = "/tmp/hourglass-accuracy-XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("cannot make a directory for LMDB");
    lmdb_root = dir;
  }
  int lmdb_runs = 0;
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ignored;
      if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
    }
  } remove_lmdb{lmdb_root};

  const int64_t days = o.quick ? 1 : 2;
  std::vector<Trace> traces;
  traces.push_back(Poisson(o.quick ? 5 : 200, days * kDay, 1));
  traces.push_back(Bursts(o.quick ? 2 : 50, days * kDay, 2));
  traces.push_back(Boundary(o.quick ? 1 : 10, days * kDay));
  traces.push_back(Diurnal(o.quick ? 5 : 300, (o.quick ? 1 : 3) * kDay, 3));
  if (!o.apache.empty()) traces.push_back(Apache(o.apache));
  for (Trace& t : traces) Sort(t);

  const std::vector<std::pair<std::string, std::vector<Limit>>> policies = {
      {"2/s, 5/m, 10/h, 100/d", *ParseLimits("2/s, 5/m, 10/h, 100/d")},
      {"100/d", *ParseLimits("100/d")}};

  std::filesystem::create_directories(o.out);
  auto csv = fmt::output_file(o.out + "/accuracy.csv");
  auto csv_hot = fmt::output_file(o.out + "/hot_path.csv");
  csv_hot.print(
      "trace,policy,engine,keys_read_p50,keys_read_p99,keys_read_max,round_trips_per_decision,"
      "cache_hits_per_decision,blocked_share\n");
  csv.print(
      "trace,policy,limiter,requests,admitted,denied,over_admissions,needless_denials,"
      "count_error_mean,count_error_max,keys_read_per_decision,keys_written_per_decision,"
      "stored_keys_peak\n");
  std::string md =
      "# Accuracy: hourglass against the peers' algorithms\n\n"
      "Generated by `bench/run.sh` (`build/bench/accuracy`). Admitted mode: every limiter counts "
      "only "
      "the hits it admitted. Over-admissions and needless denials are judged against each "
      "limiter's own admitted hits in exact sliding windows.\n\n"
      "On the real log, \"hourglass via Envoy gRPC\" asks the same engine through Envoy's "
      "ShouldRateLimit over a real gRPC channel, one descriptor per limit. The protocol tells a "
      "count only as limit - limit_remaining, an upper bound, so its count error says whether "
      "limit_remaining ever promised more room than there was; it shows no keys.\n";
  std::map<std::string, std::pair<uint64_t, uint64_t>>
      totals;  // limiter -> over, needless (main policy)
  std::optional<fmt::ostream> manifest;
  if (!o.audit_dir.empty()) {
    std::filesystem::create_directories(o.audit_dir);
    manifest.emplace(fmt::output_file(o.audit_dir + "/manifest.csv"));
    manifest->print(
        "file,trace,policy,limiter,requests,admitted,over_admissions,needless_denials\n");
  }
  std::vector<std::string> limiter_order;
  std::vector<Sample> boundary_samples_fixed, boundary_samples_counter, boundary_samples_hourglass;
  bool hourglass_exact = true;

  for (const Trace& trace : traces) {
    uint32_t features = 0;
    for (const Request& r : trace.requests) features = std::max(features, r.feature + 1);
    md += fmt::format("\n## {} ({} requests, {} features, {} to {})\n", trace.name,
                      trace.requests.size(), features,
                      trace.requests.empty() ? 0 : trace.requests.front().t,
                      trace.requests.empty() ? 0 : trace.requests.back().t);
    for (const auto& [policy_name, limits] : policies) {
      md += fmt::format(
          "\n### policy {}\n\n| limiter | admitted | denied | over-admissions | needless denials "
          "| count error mean | count error max | keys read / decision | keys written / decision "
          "| stored keys (peak) |\n|---|---|---|---|---|---|---|---|---|---|\n",
          policy_name);
      ManualClock clock(FromUnix(kEpoch));
      MemoryStore memory(clock);
      std::vector<std::unique_ptr<Store>> others;  // outlive the limiters that use them
      std::vector<std::unique_ptr<Limiter>> limiters;
      limiters.push_back(MakeHourglass(
          "hourglass (memory store)", memory, clock, limits,
          [&memory] { return memory.LiveKeys(); }, HotPathEngineOptions()));
      // The same engine without the hot path, each in its own namespace of the same store.
      EngineOptions exact = ExactCoverOptions();
      exact.name_space = "exact";
      limiters.push_back(MakeHourglass(
          "hourglass, exact cover (no hot path)", memory, clock, limits,
          [&memory] { return memory.LiveKeys(); }, exact));
      std::unique_ptr<Store> memcached;
      const bool on_memcached = !o.servers.empty() && trace.name.rfind("apache", 0) == 0;
      if (on_memcached) {
        if (server) server->Raw("flush_all\r\n");
        MemcachedOptions options;
        options.io_timeout = std::chrono::milliseconds{2000};
        // memcached lives in real time; the engine replays the trace's time.
        memcached = std::move(
            *OpenStore("memcached://" + o.servers, SystemClock::Get(), {.network = options}));
        testing::MemcachedServer* s = server.get();
        limiters.push_back(MakeHourglass(
            "hourglass (memcached)", *memcached, clock, limits,
            [s] { return s != nullptr ? static_cast<uint64_t>(s->Stat("curr_items")) : 0; },
            HotPathEngineOptions()));
        EngineOptions grpc = HotPathEngineOptions();
        grpc.name_space = "envoy";
        limiters.push_back(
            MakeEnvoyGrpc("hourglass via Envoy gRPC (memcached)", *memcached, clock, limits, grpc));
      }
      if (trace.name.rfind("apache", 0) == 0) {
        std::vector<OtherStore> stores;
        if (redis) {
          (void)redis->Command({"FLUSHALL"});
          testing::RedisServer* r = redis.get();
          stores.push_back({"hourglass (Redis, decided on the store)", "redis://" + r->address(),
                            [r] { return std::stoull("0" + r->Command({"DBSIZE"})); }});
        }
        if (o.lmdb) {
          const std::string dir = lmdb_root + "/" + std::to_string(lmdb_runs++);
          stores.push_back({"hourglass (LMDB, decided on the store)", "lmdb://" + dir, nullptr});
        }
        for (OtherStore& other : stores) {
          StoreOptions options;
          options.network.io_timeout = std::chrono::milliseconds{2000};
          Result<std::unique_ptr<Store>> store = OpenStore(other.url, SystemClock::Get(), options);
          if (!store.ok()) throw std::runtime_error(store.error().ToString());
          Store* raw = store->get();
          if (!other.keys) {
            other.keys = [raw] {
              std::vector<Result<ServerStats>> stats = raw->Stats();
              return stats.empty() || !stats[0].ok() ? uint64_t{0} : stats[0]->curr_items;
            };
          }
          limiters.push_back(
              MakeHourglass(other.name, *raw, clock, limits, other.keys, HotPathEngineOptions()));
          others.push_back(std::move(*store));
        }
      }
      limiters.push_back(MakeSlidingLog(limits));
      limiters.push_back(MakeFixedWindow(limits));
      limiters.push_back(MakeSlidingCounter(limits));
      limiters.push_back(MakeCoarseBuckets(limits));
      limiters.push_back(MakeFirstAccess(limits));
      const bool plot = trace.name == "boundary attack" && limits.size() == 4;
      std::string hot_rows;
      for (auto& limiter : limiters) {
        std::vector<Sample>* samples = nullptr;
        if (plot && limiter->name() == kFixedWindowName) samples = &boundary_samples_fixed;
        if (plot && limiter->name() == "sliding-window counter estimate")
          samples = &boundary_samples_counter;
        if (plot && limiter->name() == "hourglass (memory store)")
          samples = &boundary_samples_hourglass;
        std::optional<std::ofstream> audit;
        const std::string audit_file =
            Slug(trace.name + " " + policy_name + " " + limiter->name()) + ".jsonl";
        if (manifest) audit.emplace(o.audit_dir + "/" + audit_file);
        const Metrics m = Replay(trace, limits, *limiter, samples, 0, 1, audit ? &*audit : nullptr);
        if (manifest) {
          manifest->print("{},\"{}\",\"{}\",\"{}\",{},{},{},{}\n", audit_file, trace.name,
                          policy_name, limiter->name(), m.requests, m.admitted, m.over, m.needless);
        }
        const double mean = m.error_n == 0 ? 0 : m.error_sum / static_cast<double>(m.error_n);
        md += fmt::format("| {} | {} | {} | {} | {} | {:.3f} | {:.1f} | {:.2f} | {:.2f} | {} |\n",
                          limiter->name(), m.admitted, m.denied, m.over, m.needless, mean,
                          m.error_max, m.keys_read, m.keys_written, m.stored_peak);
        csv.print("\"{}\",\"{}\",\"{}\",{},{},{},{},{},{:.6f},{},{:.3f},{:.3f},{}\n", trace.name,
                  policy_name, limiter->name(), m.requests, m.admitted, m.denied, m.over,
                  m.needless, mean, m.error_max, m.keys_read, m.keys_written, m.stored_peak);
        if (limiter->name().rfind("hourglass", 0) == 0 &&
            (m.over != 0 || m.needless != 0 || m.error_max != 0)) {
          hourglass_exact = false;
          fmt::print(stderr,
                     "BUG: {} on {} / {}: {} over-admissions, {} needless denials, max error {}\n",
                     limiter->name(), trace.name, policy_name, m.over, m.needless, m.error_max);
        }
        if (!limiter->keys_read_per_decision.empty()) {
          std::vector<uint64_t> keys = limiter->keys_read_per_decision;
          std::sort(keys.begin(), keys.end());
          const double n = static_cast<double>(keys.size());
          hot_rows +=
              fmt::format("| {} | {} | {} | {} | {:.2f} | {:.2f} | {:.1f}% |\n", limiter->name(),
                          keys[keys.size() / 2], keys[keys.size() * 99 / 100], keys.back(),
                          static_cast<double>(limiter->round_trips) / n,
                          static_cast<double>(limiter->cache_hits) / n,
                          100.0 * static_cast<double>(limiter->blocked_hits) / n);
          csv_hot.print("\"{}\",\"{}\",\"{}\",{},{},{},{:.4f},{:.4f},{:.4f}\n", trace.name,
                        policy_name, limiter->name(), keys[keys.size() / 2],
                        keys[keys.size() * 99 / 100], keys.back(),
                        static_cast<double>(limiter->round_trips) / n,
                        static_cast<double>(limiter->cache_hits) / n,
                        static_cast<double>(limiter->blocked_hits) / n);
        }
        // The chart: hourglass on the memory store (it replays every trace) beside each peer.
        const bool charted = limiter->name() == "hourglass (memory store)" ||
                             limiter->name().rfind("hourglass", 0) != 0;
        if (limits.size() == 4 && charted) {
          if (!totals.contains(limiter->name())) limiter_order.push_back(limiter->name());
          totals[limiter->name()].first += m.over;
          totals[limiter->name()].second += m.needless;
        }
      }
      md +=
          "\nhourglass per decision (keys read: median, p99, max; round trips; bucket-cache hits; "
          "answered by the blocked-client cache):\n\n| engine | keys p50 | keys p99 | keys max | "
          "round trips | "
          "cache hits | blocked |\n|---|---|---|---|---|---|---|\n" +
          hot_rows;
      fmt::print("{:<20} {:<22} done\n", trace.name, policy_name);
    }
  }
  csv.close();
  csv_hot.close();
  if (manifest) manifest->close();

  // Bar chart data: over-admissions and needless denials per limiter, all traces, main policy.
  {
    auto dat = fmt::output_file(o.out + "/errors_by_limiter.dat");
    dat.print(
        "# limiter over_admissions needless_denials (all traces, policy 2/s,5/m,10/h,100/d)\n");
    for (const std::string& name : limiter_order) {
      dat.print("\"{}\" {} {}\n", name, totals[name].first, totals[name].second);
    }
  }
  // Boundary attack: the minute window's estimate and exact count for the first attacker around
  // the first hour boundary (which is also a minute boundary).
  {
    auto dat = fmt::output_file(o.out + "/boundary_attack.dat");
    dat.print(
        "# seconds_from_boundary estimate_before exact_after, per limiter block (index 0 "
        "hourglass, "
        "1 fixed window, 2 sliding-window counter); 1 min window, limit 5\n");
    for (const auto* samples :
         {&boundary_samples_hourglass, &boundary_samples_fixed, &boundary_samples_counter}) {
      for (const Sample& s : *samples) {
        const int64_t from_boundary = s.t - (kEpoch + 3600);
        if (from_boundary >= -90 && from_boundary <= 90) {
          dat.print("{} {:.3f} {:.0f}\n", from_boundary, s.estimate, s.exact);
        }
      }
      dat.print("\n\n");
    }
  }
  md +=
      "\n![over-admissions and needless denials](errors.png)\n\n![boundary "
      "attack](boundary_attack.png)\n";
  std::ofstream(o.out + "/accuracy.md") << md;
  fmt::print("wrote {}/accuracy.md, accuracy.csv, errors_by_limiter.dat, boundary_attack.dat\n",
             o.out);
  if (!hourglass_exact) {
    fmt::print(stderr, "hourglass was not exact: see BUG lines above\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace hourglass::bench

int main(int argc, char** argv) {
  using hourglass::bench::Options;
  Options o;
  CLI::App app{"Replays traces through hourglass and the peers' algorithms; writes bench/results.",
               "accuracy"};
  app.add_option("--out", o.out, "output folder")->capture_default_str();
  app.add_option("--apache", o.apache, "also replay this Apache log (feature = client IP)");
  app.add_option("--servers", o.servers, "also run hourglass on this memcached (real log only)");
  app.add_flag("--start-memcached", o.start_memcached, "start a memcached on loopback for that");
  app.add_flag("--start-redis", o.start_redis,
               "also run hourglass on a Redis started on loopback (real log only)");
  app.add_flag("--lmdb", o.lmdb, "also run hourglass on an LMDB file (real log only)");
  app.add_flag("--quick", o.quick, "tiny traces (the ctest smoke run)");
  app.add_option("--audit-dir", o.audit_dir,
                 "also write every limiter's decisions as audit logs here, with manifest.csv "
                 "(for `hourglass audit`; see bench/audit_peers.py)");
  return hourglass::bench::GuardedMain(app, argc, argv, [&] { return hourglass::bench::Main(o); });
}
