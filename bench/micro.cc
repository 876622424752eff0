// Google Benchmark micro-benchmarks: the planner, the key codec, a check on the in-memory store
// (no network: the engine's own CPU cost), and folding a pack of the memcached packed layout.
//
//   micro [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <utility>

#include "hourglass/engine.h"
#include "hourglass/key_codec.h"
#include "hourglass/local_ledger.h"
#include "hourglass/memory_store.h"
#include "hourglass/packed_layout.h"
#include "hourglass/planner.h"
#include "hourglass/recent_top.h"

namespace hourglass {
namespace {

constexpr int64_t kNow = 1'431'857'103;

std::vector<Span> FourWindows(int64_t t) {
  return {{t, t}, {t - 59, t}, {t - 3599, t}, {t - 86399, t}};
}

void BM_PlanFourLimitsAtNow(benchmark::State& state) {
  const Ladder ladder = Ladder::Default();
  int64_t t = kNow;
  for (auto _ : state) {
    const std::vector<Span> spans = FourWindows(++t);
    benchmark::DoNotOptimize(PlanReads(ladder, spans, t));
  }
}
BENCHMARK(BM_PlanFourLimitsAtNow);

void BM_PlanDayInThePast(benchmark::State& state) {
  const Ladder ladder = Ladder::Default();
  int64_t t = kNow;
  for (auto _ : state) {
    const Span day{++t - 86399, t};
    benchmark::DoNotOptimize(PlanReads(ladder, {&day, 1}, std::nullopt));
  }
}
BENCHMARK(BM_PlanDayInThePast);

void BM_GroupKeyEmail(benchmark::State& state) {
  const KeyCodec codec = *KeyCodec::Create("hg");
  for (auto _ : state)
    benchmark::DoNotOptimize(codec.GroupKey("signup", "ann.smith+news@example.com"));
}
BENCHMARK(BM_GroupKeyEmail);

void BM_GroupKeyHostile10KB(benchmark::State& state) {
  const KeyCodec codec = *KeyCodec::Create("hg");
  const std::string hostile(10 * 1024, '\n');
  for (auto _ : state) benchmark::DoNotOptimize(codec.GroupKey("signup", hostile));
}
BENCHMARK(BM_GroupKeyHostile10KB);

void BM_CheckFourLimitsMemoryStore(benchmark::State& state) {
  ManualClock clock(FromUnix(kNow));
  MemoryStore store(clock);
  const Engine engine = *Engine::Create(store, clock, EngineOptions{});
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d"), CountingMode::kAdmitted,
                      FailureMode::kFailOpen};
  int i = 0;
  for (auto _ : state) {
    if (++i % 16 == 0) clock.Advance(Seconds{1});
    benchmark::DoNotOptimize(engine.Check("url_shorten", std::to_string(i % 1000), policy));
  }
}
BENCHMARK(BM_CheckFourLimitsMemoryStore);

// The hot path's own CPU on a feature checked again and again, never denied: what a hot feature's
// check costs beyond its one round trip.
void BM_CheckHotFeatureMemoryStore(benchmark::State& state) {
  ManualClock clock(FromUnix(kNow));
  MemoryStore store(clock);
  const Engine engine = *Engine::Create(store, clock, EngineOptions{});
  const Policy policy{*ParseLimits("1000000/s, 1000000/m, 1000000/h, 1000000/d"),
                      CountingMode::kAdmitted, FailureMode::kFailOpen};
  int i = 0;
  for (auto _ : state) {
    if (++i % 16 == 0) clock.Advance(Seconds{1});
    benchmark::DoNotOptimize(engine.Check("url_shorten", "10.0.0.1", policy));
  }
}
BENCHMARK(BM_CheckHotFeatureMemoryStore);

// A hammering client denied without a read (the blocked-client cache): what a local denial costs
// in admitted mode (Arg 0) and in attempts mode, whose attempts are still sent (Arg 1).
void BM_CheckBlockedClientMemoryStore(benchmark::State& state) {
  ManualClock clock(FromUnix(kNow));
  MemoryStore store(clock);
  EngineOptions options;
  options.hot_path = HotPathOptions::LongRunning();
  const Engine engine = *Engine::Create(store, clock, options);
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d"),
                      state.range(0) == 0 ? CountingMode::kAdmitted : CountingMode::kAttempts,
                      FailureMode::kFailOpen};
  for (int i = 0; i < 6; ++i) (void)engine.Check("url_shorten", "10.0.0.1", policy);  // denied
  for (auto _ : state) {
    benchmark::DoNotOptimize(engine.Check("url_shorten", "10.0.0.1", policy));
  }
  state.counters["blocked"] =
      static_cast<double>(engine.Check("url_shorten", "10.0.0.1", policy)->cost.blocked_hits);
}
BENCHMARK(BM_CheckBlockedClientMemoryStore)->Arg(0)->Arg(1);

// A check decided in process while the store fails (on_store_failure: local), against
// `2/s, 5/m, 10/h, 100/d` scaled to a half: 10,000 clients, one a second each, for ten minutes of
// seconds in the ledger. Also the heap each held second takes (mallinfo2, after the fill). The
// fill (6,000,000 decisions) dominates, so the iterations are fixed: the fill runs once, not once
// per trial run that Google Benchmark makes to choose a count.
void BM_LocalLedgerDecide(benchmark::State& state) {
  LocalLedger ledger({.services = 2, .max_seconds = 100'000'000});
  const std::vector<Limit> limits = *ParseLimits("2/s, 5/m, 10/h, 100/d");
  std::vector<uint64_t> maxes;
  for (const Limit& l : limits) maxes.push_back(ledger.default_share().Of(l.max_hits));
  std::vector<std::string> groups;
  for (int f = 0; f < 10'000; ++f) groups.push_back("hg:url_shorten:198.51." + std::to_string(f));
  const auto decide = [&](size_t f, int64_t t) {
    std::vector<Span> spans;
    for (const Limit& l : limits) spans.push_back(l.window.SpanAt(FromUnix(t)));
    return ledger.Decide(groups[f], spans, maxes, {.t = t});
  };
  const size_t before = mallinfo2().uordblks;
  for (int64_t t = kNow - 600; t < kNow; ++t) {  // 10 minutes of a hit a second per client
    for (size_t f = 0; f < groups.size(); ++f) decide(f, t);
  }
  const double held = static_cast<double>(ledger.stats().held_seconds);
  state.counters["bytes_per_held_second"] =
      static_cast<double>(mallinfo2().uordblks - before) / held;
  uint64_t i = 0;
  for (auto _ : state) {
    ++i;
    benchmark::DoNotOptimize(decide(i % groups.size(), kNow + static_cast<int64_t>(i / 10'000)));
  }
}
BENCHMARK(BM_LocalLedgerDecide)->Iterations(300'000);

// `state`'s iterations as RecentTop::Record calls (capacity 256, 50,000 a second) on `clients`
// clients: the i-th on client pick(i).first, allowed when pick(i).second.
template <typename Pick>
void RecordEach(benchmark::State& state, uint64_t clients, Pick pick) {
  RecentTop top(256);
  std::vector<std::string> features;
  for (uint64_t f = 0; f < clients; ++f) features.push_back("198.51." + std::to_string(f));
  uint64_t i = 0;
  for (auto _ : state) {
    ++i;
    const auto [f, allowed] = pick(i);
    top.Record("url_shorten", features[f], 1, allowed,
               FromUnix(kNow + static_cast<int64_t>(i / 50'000)));
  }
}

// What /v1/top adds to every decision of `hourglass serve`: one RecentTop::Record (capacity 256,
// 10,000 clients, most checks on few of them, a tenth denied), against the checks above.
void BM_RecentTopRecord(benchmark::State& state) {
  RecordEach(state, 10'000, [](uint64_t i) {
    const uint64_t f = (i * 2654435761u) % (i % 2 == 0 ? 10 : 10'000);  // half on 10 hot ones
    return std::pair{f, i % 10 != 0};
  });
}
BENCHMARK(BM_RecentTopRecord);

// The same with every client as often (2,000 of them, more than the summary's 256 counters: most
// records take a counter from another client), nine in ten denied: the HTTP load benchmark's mix.
void BM_RecentTopRecordEvenly(benchmark::State& state) {
  RecordEach(state, 2'000, [](uint64_t i) {
    return std::pair{(i * 2654435761u) % 2'000, i % 10 == 0};
  });
}
BENCHMARK(BM_RecentTopRecordEvenly);

// A pack of the packed layout holding `records` hits, one per second from the hour's start (the
// open hour of a feature hit every second), as its appends wrote it.
std::string PackOfHits(int64_t records) {
  std::string pack = packed::PackHeader(FromUnix(kNow), Seconds{7200});
  for (int64_t s = 0; s < records; ++s) {
    pack.push_back(static_cast<char>(s & 0xff));  // a hit: offset s, kind 0, little-endian
    pack.push_back(static_cast<char>(s >> 8));
  }
  return pack;
}

// PackOfHits(records), folded as a read of it is: once per read.
void BM_PackFoldParse(benchmark::State& state) {
  const std::string pack = PackOfHits(state.range(0));
  const packed::PackedSlot hour{"", packed::PackedLevel::kHour, 0};
  for (auto _ : state) {
    benchmark::DoNotOptimize(packed::PackFold::Parse("g:p:1", pack)->Value(hour));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pack.size()));
}
BENCHMARK(BM_PackFoldParse)->Arg(1)->Arg(16)->Arg(256)->Arg(3600);

// A past hour of a feature hit every second, compacted (runs of 4-bit values), folded for its
// hour alone as a read of a month's hours does: with its seconds (arg 1) or without (arg 0).
void BM_PackFoldCompactedHour(benchmark::State& state) {
  const std::string pack =
      packed::PackFold::Parse("g:p:1", PackOfHits(packed::kPackSeconds))->Compacted();
  const packed::PackedSlot hour{"", packed::PackedLevel::kHour, 0};
  const auto depth = state.range(0) == 1 ? packed::PackFold::Depth::kSeconds
                                         : packed::PackFold::Depth::kMinutesAndHour;
  for (auto _ : state) {
    benchmark::DoNotOptimize(packed::PackFold::Parse("g:p:1", pack, depth)->Value(hour));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pack.size()));
}
BENCHMARK(BM_PackFoldCompactedHour)->Arg(1)->Arg(0);

}  // namespace
}  // namespace hourglass

BENCHMARK_MAIN();
