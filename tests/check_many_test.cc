// Engine::CheckMany, the batch check: on random traces its decisions are exactly those of lone
// checks and peeks run one after another (in-memory store, and real memcached servers), its checks
// share one store call per step, and concurrent batches on one feature never admit over the limit.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "counting_store.h"
#include "hourglass/engine.h"
#include "hourglass/memcached_store.h"
#include "hourglass/memory_store.h"
#include "memcached_server.h"
#include "trace_length.h"

namespace hourglass {
namespace {

constexpr int64_t kStart = 1'431'820'800;  // 2015-05-17 00:00:00 UTC

using testing::CountingStore;

void ExpectSameDecision(const Result<Decision>& batched, const Result<Decision>& lone,
                        const std::string& where) {
  ASSERT_EQ(batched.ok(), lone.ok()) << where;
  if (!lone.ok()) {
    EXPECT_EQ(batched.error().ToString(), lone.error().ToString()) << where;
    return;
  }
  const Decision &b = *batched, &l = *lone;
  EXPECT_EQ(b.allowed, l.allowed) << where;
  EXPECT_EQ(b.recorded, l.recorded) << where;
  EXPECT_EQ(b.degraded, l.degraded) << where;
  EXPECT_EQ(b.retry_after, l.retry_after) << where;
  EXPECT_EQ(b.at, l.at) << where;
  EXPECT_EQ(b.cost.keys_read, l.cost.keys_read) << where;
  EXPECT_EQ(b.cost.round_trips, l.cost.round_trips) << where;
  EXPECT_EQ(b.cost.blocked_hits, l.cost.blocked_hits) << where;
  ASSERT_EQ(b.limits.size(), l.limits.size()) << where;
  for (size_t i = 0; i < l.limits.size(); ++i) {
    const LimitOutcome &x = b.limits[i], &y = l.limits[i];
    EXPECT_EQ(x.count, y.count) << where << " limit " << i;
    EXPECT_EQ(x.count_min, y.count_min) << where << " limit " << i;
    EXPECT_EQ(x.exact, y.exact) << where << " limit " << i;
    EXPECT_EQ(x.exceeded, y.exceeded) << where << " limit " << i;
    EXPECT_EQ(x.remaining, y.remaining) << where << " limit " << i;
    EXPECT_EQ(x.retry_after, y.retry_after) << where << " limit " << i;
  }
}

// Two engines on one clock, each over its own store (or its own namespace of one store): one
// checks in batches, the other alone, and every decision and count must agree.
class BatchAgainstLone {
 public:
  BatchAgainstLone(Store& batched, Store& lone, ManualClock& clock, HotPathOptions hot,
                   std::string batched_space = "a", std::string lone_space = "b")
      : clock_(clock),
        batched_(*Engine::Create(batched, clock, Options(hot, batched_space))),
        lone_(*Engine::Create(lone, clock, Options(hot, lone_space))) {}

  // A random trace of `rounds` batches of up to `max_batch` checks on a few features.
  void Run(uint32_t seed, int rounds, int max_batch) {
    std::mt19937 rng(seed);
    const std::vector<Policy> policies = {
        Policy{*ParseLimits("2/s, 5/m, 10/h, 30/d"), CountingMode::kAdmitted},
        Policy{*ParseLimits("3/10s, 8/h"), CountingMode::kAttempts},
        Policy{*ParseLimits("1/s, 4/5m"), CountingMode::kAdmitted},
    };
    const std::vector<std::string> features = {"ann@example.com", "bob", std::string("\0x", 2),
                                               "10.0.0.1", "a b\r\n"};
    const std::vector<std::string> events = {"signup", "shorten"};
    for (int r = 0; r < rounds; ++r) {
      clock_.Advance(Seconds{std::uniform_int_distribution<int>(0, 2)(rng) == 0
                                 ? std::uniform_int_distribution<int>(1, 900)(rng)
                                 : std::uniform_int_distribution<int>(0, 1)(rng)});
      const int n = std::uniform_int_distribution<int>(1, max_batch)(rng);
      std::vector<Engine::CheckRequest> checks;
      for (int i = 0; i < n; ++i) {
        Engine::CheckRequest c;
        c.event = events[rng() % events.size()];
        c.feature = features[rng() % features.size()];
        c.policy = &policies[rng() % policies.size()];
        c.hits = rng() % 8 == 0 ? 2 : 1;
        if (rng() % 10 == 0) c.at = clock_.Now() - Seconds{rng() % 3600};  // a past instant
        if (rng() % 50 == 0) c.event = "";                                 // refused
        c.record = rng() % 6 != 0;                                         // a peek
        checks.push_back(c);
      }
      std::vector<Result<Decision>> batched = batched_.CheckMany(checks);
      ASSERT_EQ(batched.size(), checks.size());
      for (size_t i = 0; i < checks.size(); ++i) {
        const Engine::CheckRequest& c = checks[i];
        Result<Decision> lone = c.record ? lone_.Check(c.event, c.feature, *c.policy, c.hits, c.at)
                                         : lone_.Peek(c.event, c.feature, *c.policy, c.hits, c.at);
        ExpectSameDecision(batched[i], lone,
                           "seed " + std::to_string(seed) + " round " + std::to_string(r) +
                               " check " + std::to_string(i));
        if (::testing::Test::HasFailure()) return;
      }
      ++rounds_run;
    }
    const std::vector<Window> windows = {*Window::Sliding(Seconds{1}),
                                         *Window::Sliding(Seconds{3600}),
                                         *Window::Sliding(Seconds{86400})};
    for (const std::string& e : events) {
      for (const std::string& f : features) {
        Result<Counts> a = batched_.Count(e, f, windows), b = lone_.Count(e, f, windows);
        ASSERT_TRUE(a.ok() && b.ok());
        for (size_t w = 0; w < windows.size(); ++w) {
          EXPECT_EQ(a->windows[w].count, b->windows[w].count) << e << " " << w;
        }
      }
    }
  }

  int rounds_run = 0;

 private:
  static EngineOptions Options(HotPathOptions hot, std::string name_space) {
    EngineOptions options;
    options.name_space = std::move(name_space);
    options.hot_path = hot;
    options.exact_retry_after = true;
    return options;
  }

  ManualClock& clock_;
  Engine batched_, lone_;
};

TEST(CheckMany, DecidesAsLoneChecksInOrderInMemory) {
  for (const HotPathOptions& hot : {HotPathOptions::Off(), HotPathOptions::LongRunning(1024)}) {
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      ManualClock clock(FromUnix(kStart));
      MemoryStore a(clock), b(clock);
      BatchAgainstLone trace(a, b, clock, hot);
      trace.Run(seed, testing::TraceSteps(150), 24);
      ASSERT_FALSE(::testing::Test::HasFailure());
      EXPECT_EQ(trace.rounds_run, testing::TraceSteps(150));
    }
  }
}

TEST(CheckMany, DecidesAsLoneChecksInOrderOnTwoMemcachedServers) {
  testing::MemcachedServer m1, m2;
  ASSERT_TRUE(m1.running() && m2.running()) << m1.error() << m2.error();
  MemcachedOptions options;
  options.servers = {m1.address(), m2.address()};
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  // The manual clock runs ahead of memcached's: buckets live longer than needed, never shorter.
  for (const HotPathOptions& hot : {HotPathOptions::Off(), HotPathOptions::LongRunning(1024)}) {
    ManualClock clock(SystemClock::Get().Now());
    const std::string run = hot.bounds ? "hot" : "off";
    BatchAgainstLone trace(**store, **store, clock, hot, "a" + run, "b" + run);
    trace.Run(7, 60, 24);
    ASSERT_FALSE(::testing::Test::HasFailure());
  }
}

TEST(CheckMany, DistinctFeaturesShareOneStoreCallPerStep) {
  ManualClock clock(FromUnix(kStart));
  MemoryStore memory(clock);
  CountingStore store(memory);
  EngineOptions options;
  options.hot_path = HotPathOptions::Off();  // every check one step: the exact cover
  Engine engine = *Engine::Create(store, clock, options);
  const Policy policy{*ParseLimits("2/s, 5/m")};
  std::vector<std::string> features;
  for (int i = 0; i < 50; ++i) features.push_back("f" + std::to_string(i));
  std::vector<Engine::CheckRequest> checks;
  for (const std::string& f : features) checks.push_back(Engine::CheckRequest("e", f, policy));
  for (int repeat = 0; repeat < 3; ++repeat) {  // the 2nd, 3rd and 4th of f0 wait their turn
    checks.push_back(Engine::CheckRequest("e", features[0], policy));
  }
  std::vector<Result<Decision>> decisions = engine.CheckMany(checks);
  EXPECT_EQ(store.apply_manys.load(), 4) << "one call, then one per repeat of f0";
  EXPECT_EQ(store.batches_in_apply_many.load(), 53u);
  // The 3rd and 4th of f0 are over 2/s; their take-backs go alone, fire-and-forget, each after
  // its own step.
  EXPECT_EQ(store.applies.load(), 0);
  EXPECT_EQ(store.sends(), (std::vector<size_t>{1, 1}));
  for (size_t i = 0; i < 51; ++i) EXPECT_TRUE(decisions[i]->allowed) << i;
  EXPECT_FALSE(decisions[51]->allowed);
  EXPECT_FALSE(decisions[52]->allowed);
}

TEST(CheckMany, ConcurrentBatchesOnOneFeatureNeverOverAdmit) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  MemcachedOptions options;
  options.servers = {server.address()};
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  ASSERT_TRUE(store.ok());
  for (const CountingMode mode : {CountingMode::kAdmitted, CountingMode::kAttempts}) {
    EngineOptions engine_options;
    engine_options.hot_path = HotPathOptions::LongRunning(1024);
    engine_options.name_space = mode == CountingMode::kAdmitted ? "adm" : "att";
    Engine engine = *Engine::Create(**store, SystemClock::Get(), engine_options);
    const Policy policy{*ParseLimits("25/h"), mode};
    std::atomic<int> admitted_shared{0};
    std::atomic<int> admitted_other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int round = 0; round < 5; ++round) {
          std::vector<Engine::CheckRequest> checks(10, Engine::CheckRequest("e", "shared", policy));
          checks.push_back(Engine::CheckRequest("e", "other", policy));
          const std::vector<Result<Decision>> decisions = engine.CheckMany(checks);
          for (size_t i = 0; i < decisions.size(); ++i) {
            if (!decisions[i].ok() || !decisions[i]->allowed) continue;
            ++(i + 1 < decisions.size() ? admitted_shared : admitted_other);
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    // Blocked clients' attempts are sent without waiting for their answers; settle them before
    // reading on another connection.
    EXPECT_EQ((*store)->Flush(), 0u);
    // 200 checks of "shared" and 20 of "other", each feature limited to 25 an hour. A concurrent
    // check may be denied spuriously (its reading includes other checks' increments that are
    // taken back later), so "shared" admits at most 25, never more.
    const std::string_view mode_name = CountingModeName(mode);
    EXPECT_LE(admitted_shared.load(), 25) << mode_name;
    EXPECT_GT(admitted_shared.load(), 0) << mode_name;
    EXPECT_EQ(admitted_other.load(), 20) << mode_name;
    const Window hour = *Window::Sliding(Seconds{3600});
    Result<Counts> shared = engine.Count("e", "shared", {&hour, 1});
    ASSERT_TRUE(shared.ok());
    // Admitted mode counts exactly the admitted hits; attempts mode loses none.
    const uint64_t want = mode == CountingMode::kAdmitted ? admitted_shared.load() : 200u;
    EXPECT_EQ(shared->windows[0].count, want) << mode_name;
  }
}

}  // namespace
}  // namespace hourglass
