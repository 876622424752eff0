// Cost as limits grow: what one check costs when its window already holds half of a limit from
// 100/d to 1,000,000/d (and per hour), on memcached and Redis, beside a peer on the same Redis
// (bench/growth_limits.py: Python limits' moving window, the only exact peer, whose log of
// timestamps grows with the limit).
//
// For each limit L over window W the driver records L/2 hits per feature spread over the last W
// (hourglass: Engine::Record at their past seconds, one call per second at most), then checks
// the features in turn at the last second of an hour (the current hour's pack then holds a whole
// hour of hits), one thread, until --checks or --seconds. Enough features are filled that no
// check is denied: a denial is answered without the store and would flatter the cost.
// Reported per check: latency, keys read, bytes the store sent, the store's CPU (its own
// rusage/INFO), and the store's memory per feature.
//
//   growth [--limit 100/d]... [--checks 20000] [--seconds 3] [--peer "python3 ..."] [--dat FILE]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "guarded_main.h"
#include "hourglass/engine.h"
#include "hourglass/ladder.h"
#include "hourglass/memcached_store.h"
#include "hourglass/store_factory.h"
#include "memcached_server.h"
#include "nlohmann/json.hpp"
#include "redis_server.h"

namespace hourglass::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> limits{"100/d",     "1000/d",  "10000/d",  "100000/d",
                                  "1000000/d", "10000/h", "1000000/h"};
  uint64_t checks = 20000;  // the most checks per run
  double seconds = 3;       // the longest a run's checks take
  double fill = 0.5;        // the share of each limit its features hold before the checks
  std::string peer;         // a command given --servers, --limit, --checks, --seconds, --fill
  std::string dat;          // a gnuplot data file, one line per day limit
  // Numbers of features for the second table (memcached), each hit once; empty: no such table.
  std::vector<uint64_t> feature_counts;
  // The third table: one feature hit every second for this many days (0: none), in each of
  // `month_stores` (memcached, redis) with the retention a calendar month needs.
  int month_days = 0;
  std::vector<std::string> month_stores = {"memcached"};
  bool no_bases = false;  // memcached: compactions stay in their packs (a baseline)
};

// The store's own figures: CPU seconds it spent, bytes it sent, bytes it holds.
struct Figures {
  double cpu_seconds = 0;
  double bytes_sent = 0;
  double memory = 0;
  Figures operator-(const Figures& o) const {
    return {cpu_seconds - o.cpu_seconds, bytes_sent - o.bytes_sent, memory - o.memory};
  }
};

// `name value` (memcached `STAT name value`) or `name:value` (Redis INFO) in `text`.
double Field(const std::string& text, const std::string& name, char separator) {
  const std::string needle = name + separator;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    const bool line_start = at == 0 || text[at - 1] == '\n' || text[at - 1] == ' ';
    if (line_start) return std::strtod(text.c_str() + at + needle.size(), nullptr);
  }
  throw std::runtime_error("the store's statistics have no " + name);
}

// A real store server the driver started, and its figures.
struct Server {
  std::string kind;  // memcached or redis
  std::string address;
  std::unique_ptr<testing::MemcachedServer> memcached;
  std::unique_ptr<testing::RedisServer> redis;

  Figures Read() const {
    if (memcached) {
      const std::string s = memcached->Raw("stats\r\n");
      return {Field(s, "rusage_user", ' ') + Field(s, "rusage_system", ' '),
              Field(s, "bytes_written", ' '), Field(s, "bytes", ' ')};
    }
    const std::string s = redis->Command({"INFO", "everything"});
    return {Field(s, "used_cpu_user", ':') + Field(s, "used_cpu_sys", ':'),
            Field(s, "total_net_output_bytes", ':'), Field(s, "used_memory", ':')};
  }
};

struct Row {
  std::string limit, store, limiter;
  uint64_t features = 0, hits_each = 0, checks = 0, denied = 0;
  double seconds = 0, keys_read = -1, bytes_sent = 0, cpu_us = 0, memory_per_feature = 0;
  std::vector<double> latencies_us;
  double Percentile(double p) const {
    if (latencies_us.empty()) return 0;
    return latencies_us[std::min(
        latencies_us.size() - 1,
        static_cast<size_t>(p * static_cast<double>(latencies_us.size())))];
  }
};

std::string FeatureName(uint64_t f) { return fmt::format("client-{}", f); }

// How many features hold `fill` of `limit` so that `checks` checks spread over them in turn
// never exceed it.
uint64_t FeaturesFor(const Options& o, const Limit& limit) {
  const uint64_t hits = static_cast<uint64_t>(static_cast<double>(limit.max_hits) * o.fill);
  const uint64_t room = std::max<uint64_t>(1, limit.max_hits - hits - 1);
  return (o.checks + room - 1) / room;
}

// Records `hits` hits of `feature` spread evenly over the window ending 10 s ago, at most one
// Record per second of it (as traffic at that rate leaves them).
void Fill(const Engine& engine, const std::string& event, const std::string& feature, uint64_t hits,
          Seconds window, int64_t now) {
  const int64_t span = window.count() - 20;
  const uint64_t records = std::min<uint64_t>(hits, static_cast<uint64_t>(span));
  for (uint64_t r = 0; r < records; ++r) {
    const uint64_t share = hits / records + (r < hits % records ? 1 : 0);
    const int64_t at = now - 10 - span + static_cast<int64_t>((r * span) / records);
    Result<Cost> c = engine.Record(event, feature, share, FromUnix(at));
    if (!c.ok()) throw std::runtime_error("fill: " + c.error().ToString());
  }
}

std::unique_ptr<Store> OpenOn(const Server& server, const Options& o) {
  MemcachedOptions mo;
  mo.write_bases = !o.no_bases;
  mo.pool_size = 1;
  mo.io_timeout = std::chrono::milliseconds{2000};
  Result<std::unique_ptr<Store>> store =
      OpenStore(server.kind + "://" + server.address, SystemClock::Get(), {.network = mo});
  if (!store.ok()) throw std::runtime_error(store.error().ToString());
  return std::move(*store);
}

Row RunHourglass(const Server& server, const Options& o, const std::string& spec, bool hot_path,
                 int run) {
  const Limit limit = *ParseLimit(spec);
  const std::unique_ptr<Store> store = OpenOn(server, o);
  EngineOptions eo;
  eo.name_space = fmt::format("growth{}", run);
  eo.hot_path = hot_path ? HotPathOptions::LongRunning() : HotPathOptions::Off();
  // The engine's clock stands at the last second of the hour before this one: the hour's pack,
  // which every check at "now" reads, then holds a whole hour of the feature's hits, the most it
  // can (at the real time, the cost would depend on the minute of the hour the run starts at).
  ManualClock clock(FromUnix(ToUnix(SystemClock::Get().Now()) / 3600 * 3600 - 1));
  const Engine engine = *Engine::Create(*store, clock, eo);
  const Policy policy{{limit}, CountingMode::kAdmitted, FailureMode::kFailClosed};

  Row row;
  row.limit = spec;
  row.store = server.kind;
  row.limiter = hot_path ? "hourglass" : "hourglass, exact cover (no caches, no bounds)";
  row.features = FeaturesFor(o, limit);
  row.hits_each = static_cast<uint64_t>(static_cast<double>(limit.max_hits) * o.fill);
  const Figures empty = server.Read();
  const int64_t now = ToUnix(clock.Now());
  for (uint64_t f = 0; f < row.features; ++f) {
    Fill(engine, "growth", FeatureName(f), row.hits_each, limit.window.length(), now);
  }
  const Figures filled = server.Read();
  row.memory_per_feature = (filled - empty).memory / static_cast<double>(row.features);

  uint64_t read = 0;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(o.seconds);
  for (uint64_t i = 0; i < o.checks && Clock::now() < deadline; ++i) {
    const auto begin = Clock::now();
    Result<Decision> d = engine.Check("growth", FeatureName(i % row.features), policy);
    row.latencies_us.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
    if (!d.ok() || d->degraded) throw std::runtime_error("a check failed: the store is down");
    read += d->cost.keys_read;
    row.denied += d->allowed ? 0 : 1;
  }
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(row.latencies_us.begin(), row.latencies_us.end());
  const Figures used = server.Read() - filled;
  row.checks = row.latencies_us.size();
  const double n = static_cast<double>(std::max<uint64_t>(1, row.checks));
  row.keys_read = static_cast<double>(read) / n;
  row.bytes_sent = used.bytes_sent / n;
  row.cpu_us = used.cpu_seconds * 1e6 / n;
  return row;
}

// The peer's rows for one limit: it prints one JSON object per line.
std::vector<Row> RunPeer(const Server& server, const Options& o, const std::string& spec) {
  const std::string command =
      fmt::format("{} --servers {} --limit {} --checks {} --seconds {} --fill {}", o.peer,
                  server.address, spec, o.checks, o.seconds, o.fill);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
  std::string out;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  if (pclose(pipe) != 0) throw std::runtime_error("the peer failed: " + command);
  std::vector<Row> rows;
  size_t begin = 0;
  for (size_t end; (end = out.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const nlohmann::json j = nlohmann::json::parse(out.substr(begin, end - begin));
    Row row;
    row.limit = spec;
    row.store = server.kind;
    row.limiter = j.at("name");
    row.features = j.at("features");
    row.hits_each = j.at("hits_each");
    row.denied = j.at("denied");
    row.seconds = j.at("seconds");
    row.latencies_us = j.at("latencies_us").get<std::vector<double>>();
    std::sort(row.latencies_us.begin(), row.latencies_us.end());
    row.checks = row.latencies_us.size();
    const double n = static_cast<double>(std::max<uint64_t>(1, row.checks));
    row.keys_read = j.at("keys_read");
    row.bytes_sent = j.at("bytes_sent").get<double>() / n;
    row.cpu_us = j.at("cpu_seconds").get<double>() * 1e6 / n;
    row.memory_per_feature = j.at("memory").get<double>() / static_cast<double>(row.features);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Bytes(double b) {
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

void PrintRow(const Row& r) {
  fmt::print(
      "| {} | {} | {} | {} x {} | {} | {:.0f} | {:.0f} | {:.0f} | {} | {:.0f} | {:.1f} | {} |\n",
      r.limit, r.store, r.limiter, r.features, r.hits_each, r.checks,
      static_cast<double>(r.checks) / r.seconds, r.Percentile(0.5), r.Percentile(0.99),
      r.keys_read < 0 ? std::string("-") : fmt::format("{:.1f}", r.keys_read), r.bytes_sent,
      r.cpu_us, Bytes(r.memory_per_feature));
}

Server StartMemcached(int megabytes) {
  Server server;
  server.kind = "memcached";
  server.memcached = std::make_unique<testing::MemcachedServer>("127.0.0.1", megabytes);
  if (!server.memcached->running())
    throw std::runtime_error("cannot start memcached: " + server.memcached->error());
  server.address = server.memcached->address();
  return server;
}

Server StartRedis() {
  Server server;
  server.kind = "redis";
  server.redis = std::make_unique<testing::RedisServer>();
  if (!server.redis->running())
    throw std::runtime_error("cannot start redis: " + server.redis->error());
  server.address = server.redis->address();
  return server;
}

// The first table: every limit, on memcached and Redis, beside the peer.
void LimitsTable(const Options& o) {
  std::vector<Server> servers;
  servers.push_back(StartMemcached(1024));
  servers.push_back(StartRedis());
  fmt::print(
      "| limit | store | limiter | features x hits held | checks | checks/s | p50 µs | p99 µs | "
      "keys read / check | bytes the store sent / check | store CPU µs / check | store memory "
      "/ feature |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::FILE* dat = o.dat.empty() ? nullptr : std::fopen(o.dat.c_str(), "w");
  if (dat != nullptr)
    std::fputs("# limit/day, then p50 µs and store memory per feature of each limiter\n", dat);
  int run = 0;
  for (const std::string& spec : o.limits) {
    Result<Limit> limit = ParseLimit(spec);
    if (!limit.ok()) throw std::runtime_error(limit.error().ToString());
    std::vector<Row> rows;
    for (const Server& server : servers) {
      rows.push_back(RunHourglass(server, o, spec, true, ++run));
      if (server.kind == "memcached") rows.push_back(RunHourglass(server, o, spec, false, ++run));
    }
    if (!o.peer.empty()) {
      for (Row& r : RunPeer(servers[1], o, spec)) rows.push_back(std::move(r));
    }
    for (const Row& r : rows) {
      PrintRow(r);
      // Every feature was filled with room for every check: a denial is a wrong count.
      if (r.denied > 0) {
        throw std::runtime_error(fmt::format("{} denied {} of {} checks under {} with room left",
                                             r.limiter, r.denied, r.checks, r.limit));
      }
    }
    std::fflush(stdout);
    if (dat != nullptr && limit->window.length() == Seconds{86400}) {
      std::fprintf(dat, "%llu", static_cast<unsigned long long>(limit->max_hits));
      for (const Row& r : rows)
        std::fprintf(dat, " %.1f %.0f", r.Percentile(0.5), r.memory_per_feature);
      std::fputs("\n", dat);
    }
  }
  if (dat != nullptr) std::fclose(dat);
}

// Hits `features` [from, to) once each, 1,000 checks to a round trip, the clock walking through
// the hour that starts at `hour` as they go (live hits, as traffic leaves them).
void HitOnce(const Engine& engine, ManualClock& clock, int64_t hour, uint64_t from, uint64_t to,
             uint64_t most) {
  // Any hit fits; the day's window keeps the day ledger, as the checks' own policy does.
  static const Policy kAny{*ParseLimits("1000000/s, 1000000000/d")};
  for (uint64_t f = from; f < to;) {
    const uint64_t n = std::min<uint64_t>(1000, to - f);
    std::vector<std::string> names;
    for (uint64_t i = 0; i < n; ++i) names.push_back(FeatureName(f + i));
    std::vector<Engine::CheckRequest> checks;
    for (const std::string& name : names) checks.emplace_back("features", name, kAny);
    clock.Set(FromUnix(hour + static_cast<int64_t>((f * 3600) / most)));
    for (const Result<Decision>& d : engine.CheckMany(checks)) {
      if (!d.ok() || d->degraded || !d->allowed) throw std::runtime_error("a hit was not recorded");
    }
    f += n;
  }
}

// The second table: memcached holding more and more features, each hit once within an hour, then
// checked at random by `2/s, 5/m, 10/h, 100/d` at the hour's end. The engine's caches hold
// 100,000 features: beyond that, most checks find nothing of their feature cached.
void FeaturesTable(const Options& o) {
  const uint64_t most = *std::max_element(o.feature_counts.begin(), o.feature_counts.end());
  const Server server =
      StartMemcached(static_cast<int>(std::max<uint64_t>(1024, 256 + most * 400 / (1 << 20))));
  const std::unique_ptr<Store> store = OpenOn(server, o);
  const int64_t hour = (ToUnix(SystemClock::Get().Now()) / 3600 - 2) * 3600;  // an hour gone
  ManualClock clock(FromUnix(hour));
  EngineOptions eo;
  eo.name_space = "features";
  eo.hot_path = HotPathOptions::LongRunning();
  const Engine engine = *Engine::Create(*store, clock, eo);
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d")};
  fmt::print(
      "\n| features in memcached | hits recorded / s (batches of 1,000) | memcached bytes / "
      "feature | items / feature | checks | checks/s | p50 µs | p99 µs | p99.9 µs | keys read / "
      "check | round trips / check |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937_64 rng(11);
  uint64_t have = 0;
  for (uint64_t count : o.feature_counts) {
    const auto fill_start = Clock::now();
    HitOnce(engine, clock, hour, have, count, most);
    const double fill_seconds = std::chrono::duration<double>(Clock::now() - fill_start).count();
    const uint64_t added = count - have;
    have = std::max(have, count);
    const double bytes = server.Read().memory;
    const double items = static_cast<double>(server.memcached->Stat("curr_items"));
    clock.Set(FromUnix(hour + 3600));
    Row row;
    uint64_t read = 0, trips = 0;
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(o.seconds);
    for (uint64_t i = 0; i < o.checks && Clock::now() < deadline; ++i) {
      const std::string feature = FeatureName(rng() % have);
      const auto begin = Clock::now();
      Result<Decision> d = engine.Check("features", feature, policy);
      row.latencies_us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
      if (!d.ok() || d->degraded) throw std::runtime_error("a check failed: the store is down");
      read += d->cost.keys_read;
      trips += d->cost.round_trips;
    }
    row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::sort(row.latencies_us.begin(), row.latencies_us.end());
    const double n = static_cast<double>(std::max<size_t>(1, row.latencies_us.size()));
    fmt::print(
        "| {} | {:.0f} | {:.0f} | {:.2f} | {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.1f} | "
        "{:.2f} |\n",
        have, static_cast<double>(added) / fill_seconds, bytes / static_cast<double>(have),
        items / static_cast<double>(have), row.latencies_us.size(),
        static_cast<double>(row.latencies_us.size()) / row.seconds, row.Percentile(0.5),
        row.Percentile(0.99), row.Percentile(0.999), static_cast<double>(read) / n,
        static_cast<double>(trips) / n);
    std::fflush(stdout);
  }
}

// Keys read, round trips, latency and `server`'s CPU (µs) of `checks` checks under `policy` at
// `at`, one engine.
struct Reading {
  double keys = 0, trips = 0, p50 = 0, store_cpu_us = 0;
};
Reading ReadUnder(const Server& server, const Engine& engine, ManualClock& clock, int64_t at,
                  const Policy& policy, int checks) {
  Reading r;
  std::vector<double> latencies;
  const Figures before = server.Read();
  for (int i = 0; i < checks; ++i) {
    clock.Set(FromUnix(at + i));
    const auto begin = Clock::now();
    Result<Decision> d = engine.Peek("month", "client", policy);
    latencies.push_back(std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
    if (!d.ok() || d->degraded) throw std::runtime_error("a peek failed: the store is down");
    r.keys += static_cast<double>(d->cost.keys_read) / checks;
    r.trips += static_cast<double>(d->cost.round_trips) / checks;
  }
  r.store_cpu_us = (server.Read() - before).cpu_seconds * 1e6 / checks;
  std::sort(latencies.begin(), latencies.end());
  r.p50 = latencies[latencies.size() / 2];
  return r;
}

// One store's rows of the month's table (MonthTable).
void MonthRows(const Options& o, const std::string& kind) {
  const Server server = kind == "redis" ? StartRedis() : StartMemcached(2048);
  const std::unique_ptr<Store> store = OpenOn(server, o);
  const int64_t days = o.month_days;
  const int64_t start = (ToUnix(SystemClock::Get().Now()) / 86400 - days - 1) * 86400;
  const int64_t end = start + days * 86400;
  int run = 0;
  for (const char* ladder : {"1s,1m,1h", "1s,1m,1h,1d"}) {
    ManualClock clock(FromUnix(start));
    EngineOptions eo;
    eo.name_space = fmt::format("month{}", run++);
    eo.ladder = *Ladder::Parse(ladder);
    eo.retention = Seconds{31 * 86400};
    eo.hot_path = HotPathOptions::LongRunning();
    const Engine writer = *Engine::Create(*store, clock, eo);
    const Figures empty = server.Read();
    for (int64_t t = start; t < end; ++t) {
      clock.Set(FromUnix(t));
      if (Result<Cost> c = writer.Record("month", "client"); !c.ok()) {
        throw std::runtime_error("fill: " + c.error().ToString());
      }
    }
    const double bytes = (server.Read() - empty).memory;
    const std::vector<std::pair<std::string, Window>> windows = {
        {"calendar month (UTC)", *Window::Calendar(CalendarUnit::kMonth)},
        {"sliding 31d", *Window::Sliding(Seconds{31 * 86400})},
        {"sliding 1d", *Window::Sliding(Seconds{86400})}};
    for (const auto& [name, window] : windows) {
      const Policy policy{{Limit{window, 1'000'000'000}}};
      EngineOptions fresh = eo;
      fresh.hot_path = HotPathOptions::OneShot();
      const Engine cold = *Engine::Create(*store, clock, fresh);
      const Reading once = ReadUnder(server, cold, clock, end, policy, 20);
      const Engine warm = *Engine::Create(*store, clock, eo);
      (void)ReadUnder(server, warm, clock, end, policy, 1);
      const Reading again = ReadUnder(server, warm, clock, end + 1, policy, 200);
      for (const auto& [engine, r] :
           {std::pair{"fresh (a CLI call)", once}, std::pair{"long-running (a service)", again}}) {
        fmt::print("| {} | {} | {:.1f} MiB | {} | {} | {:.1f} | {:.2f} | {:.0f} | {:.0f} |\n", kind,
                   ladder, bytes / (1 << 20), name, engine, r.keys, r.trips, r.p50, r.store_cpu_us);
      }
    }
    std::fflush(stdout);
  }
}

// The third table: what a calendar month costs. One feature hit every second for `days` days, in
// each store with --retention 31d (every level lives that long: an hour's seconds share its pack),
// on the default ladder and on one with days, then the month so far, the last 31 days and the
// last day read by a fresh engine (a CLI call: nothing cached) and by one that read them before.
void MonthTable(const Options& o) {
  fmt::print(
      "\n| store | ladder (--retention 31d) | store bytes for {} days of a hit every second | "
      "window read at the end | engine | keys read / check | round trips / check | p50 µs | "
      "store CPU µs / check |\n|---|---|---|---|---|---|---|---|---|\n",
      o.month_days);
  for (const std::string& kind : o.month_stores) MonthRows(o, kind);
}

int Main(const Options& o) {
  if (o.limits != std::vector<std::string>{"none"}) LimitsTable(o);
  if (!o.feature_counts.empty()) FeaturesTable(o);
  if (o.month_days > 0) MonthTable(o);
  return 0;
}

}  // namespace
}  // namespace hourglass::bench

int main(int argc, char** argv) {
  hourglass::bench::Options o;
  CLI::App app{
      "Cost per check as limits grow: hourglass on memcached and Redis beside a peer on the same "
      "Redis, each feature holding half its limit.",
      "growth"};
  app.add_option("--limit", o.limits,
                 "limits to measure, e.g. 100/d 1000000/d 10000/h; none: skip the first table")
      ->capture_default_str();
  app.add_option("--checks", o.checks, "the most checks per run")->capture_default_str();
  app.add_option("--seconds", o.seconds, "the longest a run's checks take")->capture_default_str();
  app.add_option("--fill", o.fill, "the share of each limit a feature holds before the checks")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  app.add_option("--peer", o.peer,
                 "a peer's command (bench/growth_limits.py), given --servers, --limit, --checks, "
                 "--seconds and --fill; prints one JSON object per way of checking");
  app.add_option("--dat", o.dat, "write a gnuplot data file: per day limit, p50 and memory");
  app.add_option("--feature-counts", o.feature_counts,
                 "also: memcached holding this many features (growing), each hit once, checked at "
                 "random, e.g. 10000 100000 1000000 10000000");
  app.add_option("--month-days", o.month_days,
                 "also: one feature hit every second for this many days (1 to 31) with --retention "
                 "31d, and what reading a month costs")
      ->check(CLI::Range(0, 31));
  app.add_flag("--no-bases", o.no_bases,
               "memcached: keep compactions in their packs (read whole by every check), as before "
               "bases");
  app.add_option("--month-stores", o.month_stores,
                 "the stores of the month's table, among memcached and redis")
      ->check(CLI::IsMember({"memcached", "redis"}))
      ->capture_default_str();
  return hourglass::bench::GuardedMain(app, argc, argv, [&] { return hourglass::bench::Main(o); });
}
