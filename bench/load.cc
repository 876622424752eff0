// Load driver: checks against a real store (memcached, Redis or LMDB; a server started on
// loopback, or --servers), and in the same run the store's raw baseline without the engine: the
// same increments and the same keys read in one request (memcached: one store batch, one write
// and one answer; Redis: INCRBY and MGET pipelined; LMDB: one write transaction). Reports
// checks/s, latency percentiles, keys and round trips per check, and the engine/raw ratio.
// Optionally peers doing the same four limits on the same server, each a command printing one
// JSON object (bench/peer_limits.py: Python limits; bench/peers/rlf.js: rate-limiter-flexible).
//
//   load [--store memcached|redis|lmdb] [--servers H:P | --start-memcached] [--threads N]
//        [--features F] [--hot-share X] [--seconds S] [--policy "2/s, 5/m, 10/h, 100/d"]
//        [--peer COMMAND]... [--scaling] [--quick] [--layout counters|packed]... [--long-lived]
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <thread>

#include "guarded_main.h"
#include "hourglass/engine.h"
#include "hourglass/key_space.h"
#include "hourglass/memcached_store.h"
#include "hourglass/memory_store.h"
#include "hourglass/planner.h"
#include "hourglass/store_factory.h"
#include "memcached_server.h"
#include "nlohmann/json.hpp"
#include "raw_stores.h"
#include "redis_server.h"

namespace hourglass::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string store = "memcached";  // memcached, redis or lmdb
  std::string lmdb_dir;             // lmdb: the directory (a temporary one when empty)
  std::string servers;
  bool start_memcached = false;
  int threads = 2;
  uint32_t features = 10000;
  double hot_share = 0.5;  // share of checks that go to the 10 hot features
  double seconds = 5;
  std::string policy = "2/s, 5/m, 10/h, 100/d";
  // Peers: commands each printing one JSON object (the driver adds --servers, --seconds, --features
  // and --hot-share).
  std::vector<std::string> peers;
  bool scaling = false;
  bool quick = false;
  bool exact_cover = false;  // engine without the hot path
  // Redis, LMDB: checks written first and taken back when denied, as on memcached, instead of
  // decided on the store (EngineOptions::atomic_checks).
  bool increment_first = false;
  bool minimal_raw = false;  // raw round trip: the increments and a get of the open buckets only
  // One engine per layout kept across slices (a service's warm caches), instead of a fresh one
  // per slice (a cold start in each).
  bool long_lived = false;
  // How memcached keeps buckets (MemcachedLayout). Several: the engine runs once per layout, its
  // slices interleaved with the others' and the raw baseline's (on the first layout), each of
  // them under its own event so that their counts stay apart (with one layout, the raw baseline
  // increments the engine's keys).
  std::vector<std::string> layouts{"packed"};
};

EngineOptions LoadEngineOptions(const Options& o) {
  EngineOptions eo;
  eo.hot_path = o.exact_cover ? HotPathOptions::Off() : HotPathOptions::LongRunning();
  eo.atomic_checks = !o.increment_first;
  return eo;
}

struct Run {
  std::string name;
  int threads = 0;
  uint64_t checks = 0;
  double seconds = 0;
  std::vector<double> latencies_us;
  double keys_read = 0, keys_written = 0, round_trips = 0;  // per check
  double cache_hits = 0, blocked_share = 0;                 // per check (hourglass)
  uint64_t errors = 0;
  double Percentile(double p) const {
    if (latencies_us.empty()) return 0;
    return latencies_us[std::min(
        latencies_us.size() - 1,
        static_cast<size_t>(p * static_cast<double>(latencies_us.size())))];
  }
};

std::string FeatureName(uint32_t f) {
  return fmt::format("10.{}.{}.{}", f >> 16, (f >> 8) & 255, f & 255);
}

// Picks features: `hot_share` of the time one of 10 hot features, else any of `features`.
class Picker {
 public:
  Picker(const Options& o, uint64_t seed) : o_(o), rng_(seed) {}
  uint32_t Next() {
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < o_.hot_share)
      return static_cast<uint32_t>(rng_() % 10);
    return static_cast<uint32_t>(rng_() % o_.features);
  }

 private:
  const Options& o_;
  std::mt19937_64 rng_;
};

Run Finish(std::string name, int threads, double seconds,
           std::vector<std::vector<double>>& per_thread) {
  Run run;
  run.name = std::move(name);
  run.threads = threads;
  run.seconds = seconds;
  for (auto& v : per_thread) run.latencies_us.insert(run.latencies_us.end(), v.begin(), v.end());
  std::sort(run.latencies_us.begin(), run.latencies_us.end());
  run.checks = run.latencies_us.size();
  return run;
}

// The store both the engine and the raw baseline run on: a connection per thread.
std::unique_ptr<Store> OpenLoadStore(const Options& o, int threads, const std::string& layout) {
  MemcachedOptions mo;
  mo.pool_size = static_cast<uint32_t>(threads);
  mo.io_timeout = std::chrono::milliseconds{1000};
  mo.layout = *ParseLayout(layout);
  const std::string url = o.store == "lmdb" ? "lmdb://" + o.lmdb_dir : o.store + "://" + o.servers;
  Result<std::unique_ptr<Store>> store = OpenStore(url, SystemClock::Get(), {.network = mo});
  if (!store.ok()) throw std::runtime_error(store.error().ToString());
  return std::move(*store);
}

// The raw client of thread `t` (Redis, LMDB), or null for memcached (its raw batch goes through
// the store, which sends it as it is).
std::unique_ptr<RawClient> RawClientFor(const Options& o, RawLmdbEnv* lmdb) {
  if (o.store == "redis") {
    std::unique_ptr<RawClient> c = RawRedis(o.servers);
    if (c == nullptr) throw std::runtime_error("raw baseline: cannot connect to " + o.servers);
    return c;
  }
  if (o.store == "lmdb") return lmdb->Client();
  return nullptr;
}

// The event the engine checks on `layout` (or the raw baseline increments, `layout` "raw"): one
// each when several layouts are compared.
std::string EventFor(const Options& o, const std::string& layout) {
  return o.layouts.size() > 1 ? "url_shorten." + layout : "url_shorten";
}

// An engine on its own store and connections.
struct LoadEngine {
  LoadEngine(const Options& o, int threads, const std::string& layout, const EngineOptions& eo)
      : store(OpenLoadStore(o, threads, layout)), engine(*Engine::Create(*store, clock, eo)) {}
  std::unique_ptr<Store> store;
  SystemClock clock;
  Engine engine;
};

// Checks for `seconds` on `loaded` (nullptr: on a fresh engine).
Run RunEngine(const Options& o, const std::vector<Limit>& limits, int threads,
              const EngineOptions& eo, const std::string& label, double seconds,
              const std::string& layout, LoadEngine* loaded = nullptr) {
  std::unique_ptr<LoadEngine> fresh;
  if (loaded == nullptr)
    loaded = (fresh = std::make_unique<LoadEngine>(o, threads, layout, eo)).get();
  Store* store = loaded->store.get();
  const Engine& engine = loaded->engine;
  const std::string event = EventFor(o, layout);
  const Policy policy{limits, CountingMode::kAdmitted, FailureMode::kFailClosed};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::atomic<uint64_t> read{0}, written{0}, trips{0}, errors{0}, cached{0}, blocked{0};
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Picker picker(o, 1000 + static_cast<uint64_t>(t));
      uint64_t r = 0, w = 0, rt = 0, c = 0, b = 0;
      while (Clock::now() < deadline) {
        const std::string feature = FeatureName(picker.Next());
        const auto begin = Clock::now();
        Result<Decision> d = engine.Check(event, feature, policy);
        latencies[static_cast<size_t>(t)].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
        if (!d.ok() || d->degraded) {
          ++errors;
          continue;
        }
        r += d->cost.keys_read;
        w += d->cost.keys_written;
        rt += d->cost.round_trips;
        c += d->cost.cache_hits;
        b += d->cost.blocked_hits;
      }
      read += r;
      written += w;
      trips += rt;
      cached += c;
      blocked += b;
    });
  }
  for (std::thread& w : workers) w.join();
  Run run = Finish(label, threads, std::chrono::duration<double>(Clock::now() - start).count(),
                   latencies);
  const double n = static_cast<double>(std::max<uint64_t>(1, run.checks));
  run.keys_read = static_cast<double>(read) / n;
  run.keys_written = static_cast<double>(written) / n;
  run.round_trips = static_cast<double>(trips) / n;
  run.cache_hits = static_cast<double>(cached) / n;
  run.blocked_share = static_cast<double>(blocked) / n;
  // Degraded checks, and fire-and-forget writes (take-backs) memcached refused.
  run.errors = errors + store->Flush();
  return run;
}

// The same work without the engine: keys computed beforehand (outside the timing), then one
// store batch carrying the hit's increments and the planned reads: the single write and single
// answer the engine's check needs at best, on the same wire.
Run RunRaw(const Options& o, const std::vector<Limit>& limits, int threads, double seconds) {
  std::unique_ptr<Store> store =
      o.store == "memcached" ? OpenLoadStore(o, threads, o.layouts.front()) : nullptr;
  std::unique_ptr<RawLmdbEnv> lmdb =
      o.store == "lmdb" ? std::make_unique<RawLmdbEnv>(o.lmdb_dir + "/raw") : nullptr;
  SystemClock clock;
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::atomic<uint64_t> read{0}, written{0}, errors{0};
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  const auto start = Clock::now();
  const Ladder ladder = Ladder::Default();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      MemoryStore unused(clock);
      const Engine engine = *Engine::Create(unused, clock, EngineOptions{});
      const KeySpace& keys = engine.keys();
      Picker picker(o, 1000 + static_cast<uint64_t>(t));
      std::unique_ptr<RawClient> raw = RawClientFor(o, lmdb.get());
      uint64_t r = 0, w = 0;
      while (Clock::now() < deadline) {
        // Prepare exactly what the engine sends: the hit's increments and the planned reads.
        Batch batch;
        batch.group = keys.GroupKey(EventFor(o, "raw"), FeatureName(picker.Next()));
        const int64_t now = ToUnix(clock.Now());
        for (size_t level = 0; level < ladder.levels(); ++level) {
          batch.increments.push_back(
              {keys.BucketKey(batch.group, ladder.BucketAt(level, now)), 1, keys.Ttl(level)});
        }
        if (o.minimal_raw) {
          // One round trip carrying the increments, reading them back.
          for (const Increment& inc : batch.increments) batch.reads.push_back(inc.key);
        } else {
          std::vector<Span> spans;
          for (const Limit& l : limits) spans.push_back(l.window.SpanAt(FromUnix(now)));
          for (const Bucket& b : PlanReads(ladder, spans, now).reads) {
            batch.reads.push_back(keys.BucketKey(batch.group, b));
          }
        }
        const auto begin = Clock::now();
        const bool ok = raw != nullptr ? raw->Apply(batch) : store->Apply(batch).ok();
        latencies[static_cast<size_t>(t)].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
        if (!ok) ++errors;
        r += batch.reads.size();
        w += batch.increments.size();
      }
      read += r;
      written += w;
    });
  }
  for (std::thread& w : workers) w.join();
  const std::string how = o.store == "redis"  ? " (pipelined INCRBY + MGET)"
                          : o.store == "lmdb" ? " (one write transaction)"
                                              : "";
  Run run = Finish((o.minimal_raw ? "raw round trip: same increments, read back"
                                  : "raw round trip: same increments, same keys read") +
                       how,
                   threads, std::chrono::duration<double>(Clock::now() - start).count(), latencies);
  const double n = static_cast<double>(std::max<uint64_t>(1, run.checks));
  run.keys_read = static_cast<double>(read) / n;
  run.keys_written = static_cast<double>(written) / n;
  run.round_trips = 1;
  run.errors = errors;
  return run;
}

// Accumulates slices of one kind of run.
void Merge(Run& total, const Run& slice) {
  const double before = static_cast<double>(total.checks);
  const double n = static_cast<double>(slice.checks);
  total.name = slice.name;
  total.threads = slice.threads;
  total.seconds += slice.seconds;
  total.latencies_us.insert(total.latencies_us.end(), slice.latencies_us.begin(),
                            slice.latencies_us.end());
  total.checks += slice.checks;
  const auto avg = [&](double a, double b) {
    return before + n == 0 ? 0 : (a * before + b * n) / (before + n);
  };
  total.keys_read = avg(total.keys_read, slice.keys_read);
  total.keys_written = avg(total.keys_written, slice.keys_written);
  total.round_trips = avg(total.round_trips, slice.round_trips);
  total.cache_hits = avg(total.cache_hits, slice.cache_hits);
  total.blocked_share = avg(total.blocked_share, slice.blocked_share);
  total.errors += slice.errors;
}

// Engine runs (one per layout) and raw runs alternate in short slices, so all see the same moments
// (keys read depend on the time of day) and the same background load; their latencies are pooled
// per kind. Engine runs first, in the order of `o.layouts`, then the raw run.
std::vector<Run> Interleaved(const Options& o, const std::vector<Limit>& limits, int threads) {
  const int rounds = o.quick ? 1 : 10;
  std::vector<Run> runs(o.layouts.size() + 1);
  std::vector<std::unique_ptr<LoadEngine>> engines(o.layouts.size());
  if (o.long_lived) {
    for (size_t l = 0; l < o.layouts.size(); ++l) {
      engines[l] = std::make_unique<LoadEngine>(o, threads, o.layouts[l], LoadEngineOptions(o));
    }
  }
  const std::string label =
      o.exact_cover ? "hourglass check, exact cover" : "hourglass check, hot path";
  for (int r = 0; r < rounds; ++r) {
    for (size_t l = 0; l < o.layouts.size(); ++l) {
      const std::string& layout = o.layouts[l];
      Merge(runs[l], RunEngine(o, limits, threads, LoadEngineOptions(o),
                               o.layouts.size() > 1 ? label + ", " + layout + " layout" : label,
                               o.seconds / rounds, layout, engines[l].get()));
    }
    Merge(runs.back(), RunRaw(o, limits, threads, o.seconds / rounds));
  }
  for (Run& run : runs) std::sort(run.latencies_us.begin(), run.latencies_us.end());
  return runs;
}

double Throughput(const Run& r) { return static_cast<double>(r.checks) / r.seconds; }

std::optional<Run> RunPeer(const Options& o, const std::string& peer) {
  const std::string command =
      fmt::format("{} --servers {} --seconds {} --features {} --hot-share {}", peer, o.servers,
                  o.seconds, o.features, o.hot_share);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  if (pclose(pipe) != 0) {
    fmt::print(stderr, "peer failed: {}\n{}\n", command, out);
    return std::nullopt;
  }
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  Run run;
  run.name = j["name"];
  run.threads = 1;
  run.checks = j["checks"];
  run.seconds = j["seconds"];
  run.latencies_us = j["latencies_us"].get<std::vector<double>>();
  std::sort(run.latencies_us.begin(), run.latencies_us.end());
  run.keys_read = j["keys_read"];
  run.keys_written = j["keys_written"];
  run.round_trips = j["round_trips"];
  return run;
}

void PrintRuns(const std::vector<Run>& runs) {
  fmt::print(
      "| run | threads | checks | checks/s | p50 µs | p99 µs | p99.9 µs | keys read / check | keys "
      "written / check | round trips / check | cached buckets / check | answered locally | errors "
      "|\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Run& r : runs) {
    fmt::print(
        "| {} | {} | {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.1f} | {:.1f} | {:.2f} | {:.1f} | "
        "{:.1f}% | {} |\n",
        r.name, r.threads, r.checks, static_cast<double>(r.checks) / r.seconds, r.Percentile(0.5),
        r.Percentile(0.99), r.Percentile(0.999), r.keys_read, r.keys_written, r.round_trips,
        r.cache_hits, 100 * r.blocked_share, r.errors);
  }
}

int Main(Options o) {
  if (o.quick) o.seconds = std::min(o.seconds, 0.3);
  std::unique_ptr<testing::MemcachedServer> server;
  std::unique_ptr<testing::RedisServer> redis;
  if (o.store == "memcached" && (o.start_memcached || o.servers.empty())) {
    server = std::make_unique<testing::MemcachedServer>();
    if (!server->running()) throw std::runtime_error("cannot start memcached: " + server->error());
    o.servers = server->address();
  }
  if (o.store == "redis" && o.servers.empty()) {
    redis = std::make_unique<testing::RedisServer>();
    if (!redis->running()) throw std::runtime_error("cannot start redis: " + redis->error());
    o.servers = redis->address();
  }
  std::string own_dir;
  if (o.store == "lmdb" && o.lmdb_dir.empty()) {
    char dir[] = "/tmp/hourglass-load-XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("cannot make a directory for LMDB");
    o.lmdb_dir = own_dir = dir;
  }
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ignored;
      if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
    }
  } remove_dir{own_dir};
  const std::vector<Limit> limits = *ParseLimits(o.policy);
  fmt::print(
      "## Load: policy {}, {} features ({:.0f}% of checks on 10 hot ones), {:.1f} s per kind of "
      "run (engine and raw interleaved in 10 slices), engine {}, {} {}\n\n",
      o.policy, o.features, 100 * o.hot_share, o.seconds,
      o.exact_cover ? "exact cover" : "hot path (bounds, bucket cache, blocked-client cache)",
      o.store, o.store == "lmdb" ? o.lmdb_dir : o.servers);
  std::vector<Run> runs = Interleaved(o, limits, 1);
  if (o.threads > 1) {
    for (Run& run : Interleaved(o, limits, o.threads)) runs.push_back(std::move(run));
  }
  std::vector<Run> peers;
  for (const std::string& command : o.peers) {
    if (std::optional<Run> peer = RunPeer(o, command)) peers.push_back(*peer);
  }
  runs.insert(runs.end(), peers.begin(), peers.end());
  PrintRuns(runs);
  const Run& raw1 = runs[o.layouts.size()];
  fmt::print("\n");
  for (size_t l = 0; l < o.layouts.size(); ++l) {
    fmt::print("engine{} / raw, 1 thread: p50 {:.2f}x, p99 {:.2f}x, throughput {:.2f}x\n",
               o.layouts.size() > 1 ? " (" + o.layouts[l] + ")" : "",
               runs[l].Percentile(0.5) / raw1.Percentile(0.5),
               runs[l].Percentile(0.99) / raw1.Percentile(0.99),
               Throughput(runs[l]) / Throughput(raw1));
  }
  for (size_t l = 1; l < o.layouts.size(); ++l) {
    fmt::print("{} / {} layout, 1 thread: p50 {:.2f}x, p99 {:.2f}x, throughput {:.2f}x\n",
               o.layouts[l], o.layouts[0], runs[l].Percentile(0.5) / runs[0].Percentile(0.5),
               runs[l].Percentile(0.99) / runs[0].Percentile(0.99),
               Throughput(runs[l]) / Throughput(runs[0]));
  }
  for (const Run& peer : peers) {
    fmt::print("hourglass / {}, 1 thread each: throughput {:.1f}x, p50 latency {:.2f}x lower\n",
               peer.name,
               (static_cast<double>(runs[0].checks) / runs[0].seconds) /
                   (static_cast<double>(peer.checks) / peer.seconds),
               peer.Percentile(0.5) / runs[0].Percentile(0.5));
  }

  if (o.scaling) {
    fmt::print(
        "\n## Scaling: one sliding limit read exactly (no hot path), 1 thread, by window and "
        "ladder\n\n");
    fmt::print(
        "| ladder | window | checks/s | p50 µs | p99 µs | keys read / check "
        "|\n|---|---|---|---|---|---|\n");
    for (const char* ladder : {"1s,1m,1h", "1s,1m,1h,1d"}) {
      for (const char* window : {"1m", "1h", "1d", "7d"}) {
        EngineOptions eo;
        eo.ladder = *Ladder::Parse(ladder);
        eo.retention = Seconds{7 * 86400};
        eo.name_space = fmt::format("scale{}", std::string(ladder).size());
        const Run r = RunEngine(o, *ParseLimits(fmt::format("1000000/{}", window)), 1, eo, "",
                                o.seconds / 4, o.layouts.front());
        fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.0f} | {:.1f} |\n", ladder, window,
                   static_cast<double>(r.checks) / r.seconds, r.Percentile(0.5), r.Percentile(0.99),
                   r.keys_read);
      }
    }
    if (server && o.store == "memcached") {
      // Memory per active feature after a simulated day: 100 features, one hit every ~30 s each.
      server->Raw("flush_all\r\n");
      MemcachedOptions mo;
      mo.servers = {server->address()};
      std::unique_ptr<MemcachedStore> store = std::move(*MemcachedStore::Create(mo));
      ManualClock clock(FromUnix(1'431'820'800));
      const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
      std::mt19937_64 rng(7);
      const int features = o.quick ? 5 : 100;
      for (int64_t t = 0; t < 86400; t += 1) {
        for (int f = 0; f < features; ++f) {
          if (rng() % 30 == 0) {
            clock.Set(FromUnix(1'431'820'800 + t));
            (void)engine.Record("url_shorten", FeatureName(static_cast<uint32_t>(f)));
          }
        }
        if (o.quick && t > 3600) break;
      }
      const long long items = server->Stat("curr_items"), bytes = server->Stat("bytes");
      fmt::print(
          "\nAfter a simulated day of {} features hit every ~30 s (~2,900 hits each): memcached "
          "holds "
          "{} items, {} bytes: {:.0f} items and {:.0f} KiB per active feature.\n",
          features, items, bytes, static_cast<double>(items) / features,
          static_cast<double>(bytes) / features / 1024.0);
    }
  }
  return 0;
}

}  // namespace
}  // namespace hourglass::bench

int main(int argc, char** argv) {
  using hourglass::bench::Options;
  Options o;
  CLI::App app{
      "Load driver: hourglass checks against memcached beside the raw store round trip "
      "baseline and, optionally, the Python limits peer.",
      "load"};
  app.add_option("--store", o.store, "the store: memcached, redis or lmdb")
      ->check(CLI::IsMember({"memcached", "redis", "lmdb"}))
      ->capture_default_str();
  app.add_option("--servers", o.servers,
                 "the store's host:port (default: start one on loopback; lmdb: a temporary "
                 "directory)");
  app.add_option("--lmdb-dir", o.lmdb_dir, "lmdb: the directory (default: a temporary one)");
  app.add_flag("--start-memcached", o.start_memcached, "start a memcached on loopback");
  app.add_option("--threads", o.threads, "threads for the multi-threaded runs")
      ->capture_default_str();
  app.add_option("--features", o.features, "distinct features")->capture_default_str();
  app.add_option("--hot-share", o.hot_share, "share of checks on the 10 hot features")
      ->capture_default_str();
  app.add_option("--seconds", o.seconds, "seconds per kind of run")->capture_default_str();
  app.add_option("--policy", o.policy, "limits, e.g. \"2/s, 5/m, 10/h, 100/d\"")
      ->capture_default_str();
  app.add_option("--peer", o.peers,
                 "a peer's command (e.g. bench/peer_limits.py, \"node bench/peers/rlf.js\"), given "
                 "--servers, --seconds, --features and --hot-share; repeat for several");
  app.add_flag("--scaling", o.scaling, "also measure by window and ladder, and memory per feature");
  app.add_flag("--quick", o.quick, "tiny runs (the ctest smoke run)");
  app.add_flag("--exact-cover", o.exact_cover, "engine without the hot path");
  app.add_flag("--increment-first", o.increment_first,
               "Redis, LMDB: write each check's hit first and take it back when denied, instead "
               "of deciding it on the store");
  app.add_option("--layout", o.layouts,
                 "memcached layout: counters or packed; both (--layout counters --layout packed) "
                 "compares them in interleaved slices")
      ->check(CLI::IsMember({"counters", "packed"}))
      ->capture_default_str();
  app.add_flag("--long-lived", o.long_lived,
               "keep one engine per layout across slices (warm caches, as in a service) instead "
               "of a fresh one per slice");
  app.add_flag("--minimal-raw", o.minimal_raw,
               "raw baseline: one round trip with the same increments, read back");
  return hourglass::bench::GuardedMain(app, argc, argv, [&] { return hourglass::bench::Main(o); });
}
