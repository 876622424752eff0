// Concurrency against every store that processes share (a real memcached, a real Redis, an LMDB
// file): threads
// and separate processes checking one feature at the same instant never admit more than the limit
// (admitted mode) and lose no increment (attempts mode). Where the store decides a check
// atomically (Redis, LMDB), racing clients take exactly the limit: no check is denied for another's
// hit that is then taken back.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <filesystem>
#include <mutex>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/store_factory.h"
#include "memcached_server.h"
#include "redis_server.h"

namespace hourglass {
namespace {

constexpr int64_t kInstant = 1'431'857'103;
constexpr uint64_t kLimit = 10;

// The minute count of `feature`, polled for up to 2 s until it equals `expected`.
uint64_t EventualCount(const Engine& engine, const std::string& feature, uint64_t expected) {
  const Window minute = *Window::Sliding(Seconds{60});
  uint64_t count = 0;
  for (int i = 0; i < 200; ++i) {
    Result<Counts> counts = engine.Count("signup", feature, {&minute, 1});
    count = counts.ok() ? counts->windows[0].count : ~uint64_t{0};
    if (count == expected) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return count;
}

// What a run of checks saw.
struct Tally {
  uint64_t admitted = 0;
  uint64_t failures = 0;  // errors and degraded decisions
};

Tally RunChecks(const Engine& engine, const std::string& feature, const Policy& policy, int n) {
  Tally tally;
  for (int c = 0; c < n; ++c) {
    Result<Decision> d = engine.Check("signup", feature, policy);
    if (!d.ok() || d->degraded) {
      ++tally.failures;
    } else if (d->allowed) {
      ++tally.admitted;
    }
  }
  return tally;
}

// `threads` threads released at once by a barrier, each running `n` checks.
Tally RunThreads(const Engine& engine, const std::string& feature, const Policy& policy,
                 int threads, int n) {
  std::barrier start(threads);
  std::mutex mu;
  Tally total;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      start.arrive_and_wait();
      const Tally tally = RunChecks(engine, feature, policy, n);
      std::lock_guard lock(mu);
      total.admitted += tally.admitted;
      total.failures += tally.failures;
    });
  }
  for (std::thread& t : workers) t.join();
  return total;
}

// The engine without and with the hot path (bounds, bucket cache, blocked-client cache).
std::vector<std::pair<std::string, EngineOptions>> Configs() {
  EngineOptions plain;
  plain.hot_path = HotPathOptions::Off();
  EngineOptions hot;
  hot.hot_path.blocked_cache_entries = 1024;
  return {{"plain", plain}, {"hot", hot}};
}

Policy LimitPolicy(CountingMode mode) {
  return Policy{{Limit{*Window::Sliding(Seconds{60}), kLimit}}, mode, FailureMode::kFailClosed};
}

// The store of this test's kind, opened anew (each process opens its own connections).
class ConcurrencyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memcached") {
      memcached_ = std::make_unique<testing::MemcachedServer>();
      ASSERT_TRUE(memcached_->running()) << memcached_->error();
      url_ = "memcached://" + memcached_->address();
    } else if (GetParam() == "lmdb") {
      char dir[] = "/tmp/hourglass-concurrency-XXXXXX";
      ASSERT_NE(mkdtemp(dir), nullptr);
      lmdb_dir_ = dir;
      url_ = "lmdb://" + lmdb_dir_;
    } else {
      redis_ = std::make_unique<testing::RedisServer>();
      ASSERT_TRUE(redis_->running()) << redis_->error();
      url_ = "redis://" + redis_->address();
    }
  }

  void TearDown() override {
    std::error_code ignored;
    if (!lmdb_dir_.empty()) std::filesystem::remove_all(lmdb_dir_, ignored);
  }

  std::unique_ptr<Store> NewStore() const {
    StoreOptions options;
    options.network.io_timeout = std::chrono::milliseconds{2000};  // a loaded 2-core box
    options.network.connect_timeout = std::chrono::milliseconds{2000};
    Result<std::unique_ptr<Store>> store = OpenStore(url_, SystemClock::Get(), options);
    return store.ok() ? std::move(*store) : nullptr;
  }
  bool atomic() const { return GetParam() != "memcached"; }

  // `processes` child processes, each with its own store and `threads` threads of `checks`
  // checks, released at once; their tallies summed.
  Tally RunProcesses(const std::string& feature, const Policy& policy, int processes, int threads,
                     int checks) {
    int go[2], results[2];
    if (pipe(go) != 0 || pipe(results) != 0) return Tally{0, 1};
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
      const pid_t pid = fork();
      if (pid < 0) return Tally{0, 1};
      if (pid == 0) {
        close(go[1]);
        close(results[0]);
        Tally result{0, uint64_t(threads) * uint64_t(checks)};
        std::unique_ptr<Store> store = NewStore();
        ManualClock clock(FromUnix(kInstant));
        char byte;
        const bool started = read(go[0], &byte, 1) == 0;  // EOF is the start signal
        if (store != nullptr && started) {
          EngineOptions options;
          options.hot_path.blocked_cache_entries = 1024;
          const Engine engine = *Engine::Create(*store, clock, options);
          result = RunThreads(engine, feature, policy, threads, checks);
          store->Flush();
        }
        (void)!write(results[1], &result, sizeof result);
        _exit(0);
      }
      children.push_back(pid);
    }
    close(go[0]);
    close(results[1]);
    close(go[1]);  // all children start now
    Tally total;
    for (int p = 0; p < processes; ++p) {
      Tally r{0, 1};
      if (read(results[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) r = Tally{0, 1};
      total.admitted += r.admitted;
      total.failures += r.failures;
    }
    close(results[0]);
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++total.failures;
    }
    return total;
  }

  std::unique_ptr<testing::MemcachedServer> memcached_;
  std::unique_ptr<testing::RedisServer> redis_;
  std::string lmdb_dir_;
  std::string url_;
};

TEST_P(ConcurrencyTest, EightThreadsAtOneInstantNeverAdmitMoreThanTheLimit) {
  std::unique_ptr<Store> store = NewStore();
  ASSERT_NE(store, nullptr);
  ManualClock clock(FromUnix(kInstant));
  const Policy policy = LimitPolicy(CountingMode::kAdmitted);
  constexpr int kThreads = 8;
  constexpr int kChecksPerThread = 5;
  for (const auto& [config, options] : Configs()) {
    const Engine engine = *Engine::Create(*store, clock, options);
    for (int round = 0; round < 30; ++round) {
      const std::string feature = config + "-thread-round-" + std::to_string(round);
      const Tally tally = RunThreads(engine, feature, policy, kThreads, kChecksPerThread);
      ASSERT_EQ(tally.failures, 0u);
      ASSERT_LE(tally.admitted, kLimit) << "round " << round;
      if (atomic()) {
        ASSERT_EQ(tally.admitted, kLimit) << "round " << round << ": a spurious denial";
      } else {
        ASSERT_GE(tally.admitted, 1u);
      }
      // What the store holds converges to exactly what was admitted: take-backs are sent without
      // waiting, on other connections, so a read may briefly run ahead of the last of them.
      EXPECT_EQ(EventualCount(engine, feature, tally.admitted), tally.admitted);
    }
  }
}

TEST_P(ConcurrencyTest, EightThreadsInAttemptsModeLoseNoIncrement) {
  std::unique_ptr<Store> store = NewStore();
  ASSERT_NE(store, nullptr);
  ManualClock clock(FromUnix(kInstant));
  const Policy policy = LimitPolicy(CountingMode::kAttempts);
  constexpr int kThreads = 8;
  constexpr int kChecksPerThread = 200;
  for (const auto& [config, options] : Configs()) {
    SCOPED_TRACE(config);
    const Engine engine = *Engine::Create(*store, clock, options);
    const std::string mallory = "mallory-" + config;
    const Tally tally = RunThreads(engine, mallory, policy, kThreads, kChecksPerThread);
    ASSERT_EQ(tally.failures, 0u);
    // Concurrent attempts can push one another over, so at most (not exactly) the limit fits.
    EXPECT_LE(tally.admitted, kLimit);
    EXPECT_GE(tally.admitted, 1u);
    // Blocked attempts are sent without waiting: the count converges to every attempt.
    EXPECT_EQ(EventualCount(engine, mallory, uint64_t{kThreads * kChecksPerThread}),
              uint64_t{kThreads * kChecksPerThread});
  }
}

// Four processes of eight threads each, on one feature at one instant.
TEST_P(ConcurrencyTest, FourProcessesOfEightThreadsNeverAdmitMoreThanTheLimitNorLoseAnAttempt) {
  constexpr int kProcesses = 4, kThreads = 8, kChecks = 25;
  for (CountingMode mode : {CountingMode::kAdmitted, CountingMode::kAttempts}) {
    SCOPED_TRACE(CountingModeName(mode));
    const std::string feature = std::string("proc-") + std::string(CountingModeName(mode));
    const Tally total = RunProcesses(feature, LimitPolicy(mode), kProcesses, kThreads, kChecks);
    ASSERT_EQ(total.failures, 0u);
    EXPECT_LE(total.admitted, kLimit);
    EXPECT_GE(total.admitted, 1u);
    if (atomic() && mode == CountingMode::kAdmitted) {
      EXPECT_EQ(total.admitted, kLimit) << "decided on the store: no spurious denial";
    }
    std::unique_ptr<Store> store = NewStore();
    ASSERT_NE(store, nullptr);
    ManualClock clock(FromUnix(kInstant));
    const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
    const uint64_t expected = mode == CountingMode::kAttempts
                                  ? uint64_t{kProcesses * kThreads * kChecks}
                                  : total.admitted;
    EXPECT_EQ(EventualCount(engine, feature, expected), expected)
        << "attempts mode: every attempt; admitted mode: only admitted hits stay";
  }
}

// Stores that decide a check atomically: a check is denied only when the window had no room for
// it at that moment, never for another check's hit that is then taken back. Large checks (7 of
// a limit of 10, which rarely fit) race small ones (1): with increment-first, a small check that
// meets a large one's increment before its take-back is denied while there is room. Atomically,
// a small check is denied only once the window is full, and a full window stays full (admitted
// hits are never taken back): so whenever a small check was denied, the window ends full.
class AtomicConcurrencyTest : public ConcurrencyTest {};

TEST_P(AtomicConcurrencyTest, SmallChecksRacingLargeOnesAreDeniedOnlyWhenTheWindowIsFull) {
  std::unique_ptr<Store> store = NewStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->conditional_batches());
  ManualClock clock(FromUnix(kInstant));
  const Policy policy = LimitPolicy(CountingMode::kAdmitted);
  for (const auto& [config, options] : Configs()) {
    const Engine engine = *Engine::Create(*store, clock, options);
    for (int round = 0; round < 20; ++round) {
      const std::string feature = config + "-mixed-" + std::to_string(round);
      std::barrier start(8);
      std::atomic<uint64_t> admitted_hits{0}, small_denials{0}, failures{0};
      std::vector<std::thread> workers;
      for (int t = 0; t < 8; ++t) {
        const uint64_t cost = t % 2 == 0 ? 7 : 1;
        workers.emplace_back([&, cost] {
          start.arrive_and_wait();
          for (int c = 0; c < 6; ++c) {
            Result<Decision> d = engine.Check("signup", feature, policy, cost);
            if (!d.ok() || d->degraded) {
              ++failures;
            } else if (d->allowed) {
              admitted_hits += cost;
            } else if (cost == 1) {
              ++small_denials;
            }
          }
        });
      }
      for (std::thread& w : workers) w.join();
      ASSERT_EQ(failures.load(), 0u);
      ASSERT_LE(admitted_hits.load(), kLimit) << config << " round " << round;
      if (small_denials.load() > 0) {
        ASSERT_EQ(admitted_hits.load(), kLimit)
            << config << " round " << round << ": a check of 1 was denied with room left";
      }
      EXPECT_EQ(EventualCount(engine, feature, admitted_hits.load()), admitted_hits.load());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, ConcurrencyTest, ::testing::Values("memcached", "redis", "lmdb"),
                         [](const auto& param_info) { return param_info.param; });
INSTANTIATE_TEST_SUITE_P(Stores, AtomicConcurrencyTest, ::testing::Values("redis", "lmdb"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace hourglass
