// Faults with a real memcached: killed, frozen (SIGSTOP) and restarted. Calls answer within the
// timeout with a clear error, or fail open/closed as the policy says; after a restart, counting
// resumes.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "descriptors_taken.h"
#include "hourglass/engine.h"
#include "hourglass/local_ledger.h"
#include "hourglass/memcached_store.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << server_.error();
    MemcachedOptions options;
    options.servers = {server_.address()};
    options.connect_timeout = milliseconds{100};
    options.io_timeout = milliseconds{100};
    options.retry_timeout = std::chrono::seconds{1};
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(*store);
    engine_ = std::make_unique<Engine>(*Engine::Create(*store_, clock_, EngineOptions{}));
    open_ = Policy{*ParseLimits("5/m, 100/d"), CountingMode::kAdmitted, FailureMode::kFailOpen};
    closed_ = open_;
    closed_.on_store_failure = FailureMode::kFailClosed;
  }

  // Well above the 100 ms timeouts (a connect and a read), far below a hang.
  static constexpr milliseconds kBound{1500};

  testing::MemcachedServer server_;
  SystemClock clock_;
  std::unique_ptr<MemcachedStore> store_;
  std::unique_ptr<Engine> engine_;
  Policy open_, closed_;
};

TEST_F(FaultTest, KilledServerGivesClearErrorsAndPolicyDecisionsWithinTheTimeout) {
  ASSERT_TRUE(engine_->Record("signup", "ann").ok());
  server_.Kill();
  for (int i = 0; i < 5; ++i) {
    const auto start = steady_clock::now();
    Result<Cost> recorded = engine_->Record("signup", "ann");
    EXPECT_LT(steady_clock::now() - start, kBound);
    ASSERT_FALSE(recorded.ok());
    EXPECT_EQ(recorded.error().code(), ErrorCode::kUnavailable) << recorded.error().ToString();
    EXPECT_NE(
        recorded.error().message().find("memcached 127.0.0.1:" + std::to_string(server_.port())),
        std::string::npos)
        << "names the server: " << recorded.error().message();

    const auto check_start = steady_clock::now();
    Result<Decision> open = engine_->Check("signup", "ann", open_);
    Result<Decision> closed = engine_->Check("signup", "ann", closed_);
    EXPECT_LT(steady_clock::now() - check_start, 2 * kBound);
    ASSERT_TRUE(open.ok() && closed.ok());
    EXPECT_TRUE(open->allowed && open->degraded);
    EXPECT_TRUE(!closed->allowed && closed->degraded);
    ASSERT_TRUE(closed->store_error.has_value());
    EXPECT_EQ(closed->store_error->code(), ErrorCode::kUnavailable);

    const Window minute = *Window::Sliding(Seconds{60});
    EXPECT_FALSE(engine_->Count("signup", "ann", {&minute, 1}).ok());
    EXPECT_FALSE(engine_->Reset("signup", "ann").ok());
  }
}

TEST_F(FaultTest, FrozenServerTimesOutInsteadOfHanging) {
  ASSERT_TRUE(engine_->Record("signup", "ann").ok());
  ASSERT_TRUE(server_.Freeze());
  const auto start = steady_clock::now();
  Result<Cost> recorded = engine_->Record("signup", "ann");
  const auto elapsed = steady_clock::now() - start;
  server_.Thaw();
  EXPECT_LT(elapsed, kBound);
  ASSERT_FALSE(recorded.ok());
  EXPECT_TRUE(recorded.error().code() == ErrorCode::kDeadlineExceeded ||
              recorded.error().code() == ErrorCode::kUnavailable)
      << recorded.error().ToString();
  ASSERT_TRUE(server_.Freeze());
  const auto check_start = steady_clock::now();
  Result<Decision> closed = engine_->Check("signup", "bob", closed_);
  const auto check_elapsed = steady_clock::now() - check_start;
  server_.Thaw();
  EXPECT_LT(check_elapsed, kBound);
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(closed->degraded);
  EXPECT_FALSE(closed->allowed);
}

TEST_F(FaultTest, CountingResumesAfterARestart) {
  ASSERT_TRUE(engine_->Record("signup", "ann").ok());
  server_.Kill();
  EXPECT_FALSE(engine_->Record("signup", "ann").ok());
  ASSERT_TRUE(server_.Start()) << server_.error();
  // The failed server fails fast for retry_timeout (1 s here), then is tried again.
  const auto deadline = steady_clock::now() + std::chrono::seconds{10};
  bool back = false;
  while (!back && steady_clock::now() < deadline) {
    back = engine_->Record("signup", "carol").ok();
    if (!back) std::this_thread::sleep_for(milliseconds{100});
  }
  ASSERT_TRUE(back) << "counting did not resume within 10 s of the restart";
  ASSERT_TRUE(engine_->Record("signup", "carol").ok());
  const Window minute = *Window::Sliding(Seconds{60});
  EXPECT_EQ(engine_->Count("signup", "carol", {&minute, 1})->windows[0].count, 2u);
  Result<Decision> d = engine_->Check("signup", "carol", closed_);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->degraded);
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->limits[0].count, 3u);
}

// A check whose batch a frozen server received, but did not answer in time, is decided locally
// (on_store_failure local) and not written back: the server applies the hit once it runs again,
// so the hit is counted once, and the ledger tells it was uncertain.
TEST_F(FaultTest, AHitAFrozenServerReceivedIsDecidedLocallyAndCountedOnce) {
  LocalLedger ledger({.services = 1});
  EngineOptions options;
  options.fallback = &ledger;
  const Engine engine = *Engine::Create(*store_, clock_, options);
  Policy local = open_;
  local.on_store_failure = FailureMode::kLocal;
  ASSERT_TRUE(server_.Freeze());
  Result<Decision> d = engine.Check("signup", "dan", local);
  server_.Thaw();
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->local && d->allowed && d->recorded);
  EXPECT_EQ(d->store_error->code(), ErrorCode::kDeadlineExceeded) << d->store_error->ToString();
  EXPECT_EQ(ledger.stats().uncertain, 1u);
  EXPECT_FALSE(ledger.AnyPending()) << "nothing to write back: the server holds it";
  // The thawed server applies what it received; the failed server is tried again after 1 s.
  const Window minute = *Window::Sliding(Seconds{60});
  const auto deadline = steady_clock::now() + std::chrono::seconds{10};
  uint64_t counted = 0;
  while (counted == 0 && steady_clock::now() < deadline) {
    Result<Counts> counts = engine.Count("signup", "dan", {&minute, 1});
    counted = counts.ok() ? counts->windows[0].count : 0;
    if (counted == 0) std::this_thread::sleep_for(milliseconds{100});
  }
  EXPECT_EQ(counted, 1u);
  Result<Decision> next = engine.Check("signup", "dan", local);
  ASSERT_TRUE(next.ok() && !next->degraded);
  EXPECT_EQ(next->limits[0].count, 2u);
}

// What a transition handler was told, in order ("down: <error>", "up").
struct Transitions {
  std::mutex mu;
  std::vector<std::string> seen;
  ServerTransitionHandler Handler() {
    return [this](const ServerTransition& t) {
      std::lock_guard lock(mu);
      seen.push_back(t.reachable ? "up " + t.server : "down " + t.server + ": " + t.error);
    };
  }
  std::vector<std::string> Seen() {
    std::lock_guard lock(mu);
    return seen;
  }
};

TEST_F(FaultTest, AServerLostAndBackIsToldOnceEachWayHoweverManyRequestsSeeIt) {
  Transitions told;
  MemcachedOptions options{.servers = {server_.address()},
                           .connect_timeout = milliseconds{100},
                           .io_timeout = milliseconds{100},
                           .retry_timeout = std::chrono::seconds{1}};
  options.on_transition = told.Handler();
  std::unique_ptr<MemcachedStore> store = std::move(*MemcachedStore::Create(options));
  Engine engine = *Engine::Create(*store, clock_, EngineOptions{});
  ASSERT_TRUE(engine.Record("signup", "ann").ok());
  EXPECT_TRUE(told.Seen().empty()) << "a server that always answered is not news";

  server_.Kill();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) (void)engine.Record("signup", "ann");
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(told.Seen().size(), 1u);
  EXPECT_EQ(told.Seen()[0].rfind("down " + server_.address() + ": memcached ", 0), 0u)
      << told.Seen()[0];

  ASSERT_TRUE(server_.Start()) << server_.error();
  const auto deadline = steady_clock::now() + std::chrono::seconds{10};
  while (!engine.Record("signup", "ann").ok() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds{100});
  }
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(engine.Record("signup", "ann").ok());
  EXPECT_EQ(told.Seen(), (std::vector<std::string>{told.Seen()[0], "up " + server_.address()}));

  // A hung server (timeouts, not refusals) is lost the same way.
  ASSERT_TRUE(server_.Freeze());
  EXPECT_FALSE(engine.Record("signup", "ann").ok());
  server_.Thaw();
  ASSERT_EQ(told.Seen().size(), 3u);
  EXPECT_NE(told.Seen()[2].find("down " + server_.address()), std::string::npos) << told.Seen()[2];
}

TEST_F(FaultTest, GracefulStopMidRunIsAnErrorNotACrash) {
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, bad_code{0};
  std::thread worker([&] {
    while (!stop) {
      Result<Decision> d = engine_->Check("url_shorten", "1.2.3.4", closed_);
      if (!d.ok()) {
        ++bad_code;
      } else if (d->degraded) {
        ++failed;
        const ErrorCode code = d->store_error->code();
        if (code != ErrorCode::kUnavailable && code != ErrorCode::kDeadlineExceeded) ++bad_code;
      } else {
        ++ok;
      }
    }
  });
  std::this_thread::sleep_for(milliseconds{200});
  server_.Stop();
  std::this_thread::sleep_for(milliseconds{300});
  stop = true;
  worker.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(failed.load(), 0);
  EXPECT_EQ(bad_code.load(), 0);
}

// This process, out of descriptors, cannot open a connection: that is its own fault, told as
// such, and the server is not put into its fail-fast state (it is tried again at once).
TEST_F(FaultTest, OutOfDescriptorsIsTheProcesssOwnErrorAndTheServerIsNotMarkedFailed) {
  testing::DescriptorsTaken taken(STDERR_FILENO);
  ASSERT_TRUE(taken.exhausted());
  Result<Decision> starved = engine_->Check("signup", "ann", closed_);
  taken.Release();
  ASSERT_TRUE(starved.ok());
  ASSERT_TRUE(starved->degraded) << "a check without a connection was decided";
  EXPECT_FALSE(starved->allowed);  // fail closed, as the policy says
  EXPECT_EQ(starved->store_error->code(), ErrorCode::kResourceExhausted)
      << starved->store_error->ToString();
  EXPECT_NE(starved->store_error->message().find("ulimit -n"), std::string::npos)
      << starved->store_error->message();
  // Descriptors back: the very next check reaches the server.
  Result<Decision> d = engine_->Check("signup", "ann", closed_);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->degraded) << d->store_error->ToString();
  EXPECT_TRUE(d->allowed);
}

}  // namespace
}  // namespace hourglass
