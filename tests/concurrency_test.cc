// Concurrency against a real memcached: threads and separate processes checking one feature at
// the same instant never admit more than the limit (admitted mode), and lose no increment
// (attempts mode).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <mutex>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/memcached_store.h"
#include "memcached_server.h"

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

class ConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.running()) << server_.error(); }

  std::unique_ptr<MemcachedStore> NewStore() {
    MemcachedOptions options;
    options.servers = {server_.address()};
    options.io_timeout = std::chrono::milliseconds{2000};  // a loaded 2-core box must not fail
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    EXPECT_TRUE(store.ok());
    return store.ok() ? std::move(*store) : nullptr;
  }
  static Policy LimitPolicy(CountingMode mode) {
    return Policy{{Limit{*Window::Sliding(Seconds{60}), kLimit}}, mode, FailureMode::kFailClosed};
  }

  testing::MemcachedServer server_;
};

TEST_F(ConcurrencyTest, EightThreadsAtOneInstantNeverAdmitMoreThanTheLimit) {
  std::unique_ptr<MemcachedStore> store = NewStore();
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
      ASSERT_GE(tally.admitted, 1u);
      // What the store holds converges to exactly what was admitted: take-backs are sent without
      // waiting, on other connections, so a read may briefly run ahead of the last of them.
      EXPECT_EQ(EventualCount(engine, feature, tally.admitted), tally.admitted);
    }
  }
}

TEST_F(ConcurrencyTest, EightThreadsInAttemptsModeLoseNoIncrement) {
  std::unique_ptr<MemcachedStore> store = NewStore();
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

// Each child process opens its own connections, waits for the start signal, checks, and
// writes its tally to a pipe.
TEST_F(ConcurrencyTest, FourProcessesNeverAdmitMoreThanTheLimitAndLoseNoAttempt) {
  constexpr int kProcesses = 4;
  constexpr int kChecks = 100;
  for (CountingMode mode : {CountingMode::kAdmitted, CountingMode::kAttempts}) {
    const std::string feature = std::string("proc-") + std::string(CountingModeName(mode));
    int go[2], results[2];
    ASSERT_EQ(pipe(go), 0);
    ASSERT_EQ(pipe(results), 0);
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(go[1]);
        close(results[0]);
        Tally result{0, kChecks};
        MemcachedOptions options;
        options.servers = {server_.address()};
        options.io_timeout = std::chrono::milliseconds{2000};
        Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
        ManualClock clock(FromUnix(kInstant));
        char byte;
        const bool started = read(go[0], &byte, 1) == 0;  // EOF is the start signal
        if (store.ok() && started) {
          const Engine engine = *Engine::Create(**store, clock, EngineOptions{});
          result = RunChecks(engine, feature, LimitPolicy(mode), kChecks);
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
    for (int p = 0; p < kProcesses; ++p) {
      Tally r;
      ASSERT_EQ(read(results[0], &r, sizeof r), static_cast<ssize_t>(sizeof r));
      total.admitted += r.admitted;
      total.failures += r.failures;
    }
    close(results[0]);
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ASSERT_EQ(total.failures, 0u) << CountingModeName(mode);
    EXPECT_LE(total.admitted, kLimit) << CountingModeName(mode);
    EXPECT_GE(total.admitted, 1u) << CountingModeName(mode);

    std::unique_ptr<MemcachedStore> store = NewStore();
    ManualClock clock(FromUnix(kInstant));
    const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
    const Window minute = *Window::Sliding(Seconds{60});
    const uint64_t stored = engine.Count("signup", feature, {&minute, 1})->windows[0].count;
    if (mode == CountingMode::kAttempts) {
      EXPECT_EQ(stored, uint64_t{kProcesses * kChecks}) << "no attempt lost";
    } else {
      EXPECT_EQ(EventualCount(engine, feature, total.admitted), total.admitted)
          << "only admitted hits stay";
    }
  }
}

}  // namespace
}  // namespace hourglass
