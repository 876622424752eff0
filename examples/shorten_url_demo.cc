// A shorten-URL flow on memcached: five ordinary clients and one abusive client request short
// URLs over ten simulated minutes under `2/s, 5/m, 10/h, 100/d` per client IP. Prints each of the
// abusive client's decisions and a summary per client.
//
//   shorten_url_demo 127.0.0.1:11211
//
// Time is simulated with a ManualClock so the demo covers minutes in a moment; the counters are
// real memcached counters (namespace "demo", reset before the run).
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <random>

#include "hourglass/engine.h"
#include "hourglass/memcached_store.h"

using namespace hourglass;

namespace {

std::string Describe(const Decision& d) {
  std::string out;
  for (const LimitOutcome& o : d.limits) {
    out += fmt::format(" {:>3}/{:<2}", o.count,
                       o.limit.ToString().substr(o.limit.ToString().find('/') + 1));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string_view(argv[1]) == "--help") {
    std::fprintf(stderr,
                 "usage: shorten_url_demo HOST:PORT[,HOST:PORT...]\n"
                 "  Runs a simulated shorten-URL flow against memcached and prints decisions.\n"
                 "  example: shorten_url_demo 127.0.0.1:11211\n");
    return 2;
  }
  Result<std::vector<std::string>> servers = ParseServers(argv[1]);
  if (!servers.ok()) {
    std::fprintf(stderr, "shorten_url_demo: %s\n", servers.error().message().c_str());
    return 2;
  }
  MemcachedOptions options;
  options.servers = *servers;
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  if (!store.ok()) {
    std::fprintf(stderr, "shorten_url_demo: %s\n", store.error().ToString().c_str());
    return 3;
  }
  ManualClock clock(FromUnix(1'431'857'100));  // 2015-05-17 10:05:00 UTC
  EngineOptions engine_options;
  engine_options.name_space = "demo";
  const Engine engine = *Engine::Create(**store, clock, engine_options);
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d"), CountingMode::kAdmitted,
                      FailureMode::kFailOpen};

  const std::vector<std::string> clients = {"203.0.113.7 (abusive)", "198.51.100.1",
                                            "198.51.100.2",          "198.51.100.3",
                                            "198.51.100.4",          "198.51.100.5"};
  for (const std::string& client : clients) {
    if (Result<Engine::ResetOutcome> reset = engine.Reset("url_shorten", client); !reset.ok()) {
      std::fprintf(stderr, "shorten_url_demo: %s\n", reset.error().ToString().c_str());
      return 3;
    }
  }
  std::printf("policy url_shorten: 2/s, 5/m, 10/h, 100/d per client IP, admitted mode, on %s\n\n",
              (*store)->Describe().c_str());
  std::printf("%-8s %-22s %-7s %s\n", "time", "client", "answer", "counts (1s 1m 1h 1d) / retry");

  struct Tally {
    int allowed = 0, denied = 0;
  };
  std::map<std::string, Tally> tally;
  std::mt19937 rng(2015);
  Cost total_cost;
  int checks = 0;
  for (int second = 0; second < 600; ++second) {
    clock.Set(FromUnix(1'431'857'100 + second));
    for (size_t c = 0; c < clients.size(); ++c) {
      // The abusive client fires 3 requests every 2 s; the others one every ~40 s on average.
      const int requests = c == 0 ? (second % 2 == 0 ? 3 : 0) : (rng() % 40 == 0 ? 1 : 0);
      for (int r = 0; r < requests; ++r) {
        Result<Decision> d = engine.Check("url_shorten", clients[c], policy);
        if (!d.ok()) {
          std::fprintf(stderr, "shorten_url_demo: %s\n", d.error().ToString().c_str());
          return 2;
        }
        if (d->degraded) {
          std::fprintf(stderr, "shorten_url_demo: store unreachable: %s\n",
                       d->store_error->ToString().c_str());
          return 3;
        }
        total_cost += d->cost;
        ++checks;
        (d->allowed ? tally[clients[c]].allowed : tally[clients[c]].denied)++;
        // Print every decision for the first 20 s, then only the abusive client's admissions.
        if (second < 20 || (c == 0 && d->allowed)) {
          std::printf("+%3ds    %-22s %-7s%s%s\n", second, clients[c].c_str(),
                      d->allowed ? "allow" : "DENY", Describe(*d).c_str(),
                      d->allowed ? ""
                      : d->retry_after
                          ? fmt::format("  retry in {}s", d->retry_after->count()).c_str()
                          : "  never");
        }
      }
    }
  }
  std::printf("\n%-22s %8s %8s\n", "client", "allowed", "denied");
  for (const std::string& client : clients) {
    std::printf("%-22s %8d %8d\n", client.c_str(), tally[client].allowed, tally[client].denied);
  }
  std::printf(
      "\n%d checks, %.1f keys read and %.1f keys written per check, %.2f round trips per "
      "check\n",
      checks, static_cast<double>(total_cost.keys_read) / checks,
      static_cast<double>(total_cost.keys_written) / checks,
      static_cast<double>(total_cost.round_trips) / checks);
  return 0;
}
