// The exactness property under concurrency, on every store processes share (a real memcached in
// both layouts, a real Redis, an LMDB file): counts and checks at past instants agree with a
// brute-force count of the hits recorded there, while other threads and processes check the same
// feature live (on memcached each live check increments every level and a denied one takes its
// hits back, one decrement per level; on Redis and LMDB a denied one writes nothing). A multi-key
// read is not a snapshot on memcached, so a cover that subtracted a live bucket would lose hits.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/store_factory.h"
#include "memcached_server.h"
#include "redis_server.h"
#include "sliding_log.h"
#include "trace_length.h"

namespace hourglass {
namespace {

// "Now" for every engine here: 50 min 50 s into an hour, so the recent past shares its minute and
// hour with the live second, and covers ending there would read the minute (or hour) bucket minus
// the few later seconds (or minutes), which include the live ones.
constexpr int64_t kNow = 1'431'859'850;
constexpr std::string_view kEvent = "signup";

Policy OnePerMinute() {
  return Policy{
      {Limit{*Window::Sliding(Seconds{60}), 1}}, CountingMode::kAdmitted, FailureMode::kFailClosed};
}

// A store of the test's kind, by URL (each process opens its own).
struct StoreUnderTest {
  std::string url;
  StoreOptions options;
  std::unique_ptr<Store> Open() const {
    Result<std::unique_ptr<Store>> store = OpenStore(url, SystemClock::Get(), options);
    return store.ok() ? std::move(*store) : nullptr;
  }
};

// Live checks of one feature at kNow, one per minute allowed, from threads of this process and
// from child processes, until Stop(). Nearly every check is denied and takes its hits back.
class LiveNoise {
 public:
  LiveNoise(const StoreUnderTest& store, std::string feature, int threads, int processes,
            Policy policy = OnePerMinute())
      : store_(store), feature_(std::move(feature)), policy_(std::move(policy)) {
    if (pipe(stop_) != 0) return;
    for (int p = 0; p < processes; ++p) StartProcess();
    close(stop_[0]);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(stopping_); });
  }
  // Stops every checker; true when all of them checked without an error.
  bool Stop() {
    stopping_ = true;
    for (std::thread& t : threads_) t.join();
    close(stop_[1]);  // EOF tells the children to stop
    bool clean = failures_ == 0;
    for (pid_t pid : children_) {
      int status = 0;
      waitpid(pid, &status, 0);
      clean = clean && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    return clean;
  }

 private:
  void StartProcess() {
    const pid_t pid = fork();
    if (pid != 0) {
      if (pid > 0) children_.push_back(pid);
      return;
    }
    close(stop_[1]);
    std::atomic<bool> stopping{false};
    std::thread watcher([&] {
      char byte;
      (void)!read(stop_[0], &byte, 1);  // returns at EOF
      stopping = true;
    });
    Run(stopping);
    watcher.join();
    _exit(failures_ == 0 ? 0 : 1);
  }

  void Run(const std::atomic<bool>& stopping) {
    std::unique_ptr<Store> store = store_.Open();
    if (store == nullptr) {
      ++failures_;
      return;
    }
    ManualClock clock(FromUnix(kNow));
    EngineOptions options;
    options.hot_path = HotPathOptions::Off();  // every check writes and reads the store
    const Engine engine = *Engine::Create(*store, clock, options);
    while (!stopping) {
      Result<Decision> d = engine.Check(kEvent, feature_, policy_);
      if (!d.ok() || d->degraded) ++failures_;
    }
  }

  const StoreUnderTest& store_;
  std::string feature_;
  Policy policy_;
  int stop_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> failures_{0};
  std::vector<std::thread> threads_;
  std::vector<pid_t> children_;
};

// The store ("memcached" in the counters layout, "memcached_packed", "redis", "lmdb") x the
// querying engine without the hot path ("off") or as a long-running process ("long_running":
// bounds, bucket cache, blocked-client cache), for every engine and checker of the test.
using Config = std::tuple<std::string, std::string>;

class ConcurrentExactnessTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    const std::string& kind = std::get<0>(GetParam());
    under_test_.options.network.io_timeout = std::chrono::milliseconds{2000};  // a loaded box
    under_test_.options.network.connect_timeout = std::chrono::milliseconds{2000};
    if (kind == "memcached_replicated") {  // two copies on three servers
      under_test_.url = "memcached://";
      for (auto& server : replicas_) {
        server = std::make_unique<testing::MemcachedServer>();
        ASSERT_TRUE(server->running()) << server->error();
        under_test_.url += (&server == &replicas_[0] ? "" : ",") + server->address();
      }
      under_test_.options.replicas = 2;
    } else if (kind.starts_with("memcached")) {
      memcached_ = std::make_unique<testing::MemcachedServer>();
      ASSERT_TRUE(memcached_->running()) << memcached_->error();
      under_test_.url = "memcached://" + memcached_->address();
      under_test_.options.network.layout =
          kind.ends_with("_packed") ? MemcachedLayout::kPacked : MemcachedLayout::kCounters;
    } else if (kind == "redis") {
      redis_ = std::make_unique<testing::RedisServer>();
      ASSERT_TRUE(redis_->running()) << redis_->error();
      under_test_.url = "redis://" + redis_->address();
    } else {
      char dir[] = "/tmp/hourglass-exactness-XXXXXX";
      ASSERT_NE(mkdtemp(dir), nullptr);
      lmdb_dir_ = dir;
      under_test_.url = "lmdb://" + lmdb_dir_;
    }
    store_ = under_test_.Open();
    ASSERT_NE(store_, nullptr);
    EngineOptions options;
    options.hot_path =
        std::get<1>(GetParam()) == "off" ? HotPathOptions::Off() : HotPathOptions::LongRunning();
    engine_ = std::make_unique<Engine>(*Engine::Create(*store_, clock_, options));
  }
  void TearDown() override {
    engine_.reset();
    store_.reset();
    std::error_code ignored;
    if (!lmdb_dir_.empty()) std::filesystem::remove_all(lmdb_dir_, ignored);
  }

  std::unique_ptr<testing::MemcachedServer> memcached_;
  std::unique_ptr<testing::MemcachedServer> replicas_[3];
  std::unique_ptr<testing::RedisServer> redis_;
  std::string lmdb_dir_;
  StoreUnderTest under_test_;
  std::unique_ptr<Store> store_;
  ManualClock clock_{FromUnix(kNow)};
  std::unique_ptr<Engine> engine_;
};

// Two seconds ago, in the live minute: the minute bucket minus the later seconds would race the
// live take-backs. Every count reads exactly the ten hits; every check there is denied.
TEST_P(ConcurrentExactnessTest, RecentPastCountsAndChecksSeeEveryHitWhileLiveChecksTakeBack) {
  const std::string feature = "recent";
  const Instant t0 = FromUnix(kNow - 2);
  ASSERT_TRUE(engine_->Record(kEvent, feature, 10, t0).ok());
  const std::vector<Window> windows = {*Window::Sliding(Seconds{10}), *Window::Sliding(Seconds{60}),
                                       *Window::Sliding(Seconds{3600})};
  const Policy ten = {{Limit{windows[1], 10}}, CountingMode::kAdmitted, FailureMode::kFailClosed};
  LiveNoise noise(under_test_, feature, /*threads=*/2, /*processes=*/2);
  uint64_t low_counts = 0, admitted = 0, errors = 0;
  for (int i = 0; i < testing::TraceSteps(1500); ++i) {
    Result<Counts> counts = engine_->Count(kEvent, feature, windows, t0);
    Result<Decision> past = engine_->Check(kEvent, feature, ten, 1, t0);
    if (!counts.ok() || !past.ok() || past->degraded) {
      ++errors;
      continue;
    }
    for (const WindowCount& w : counts->windows) low_counts += w.count != 10;
    admitted += past->allowed;
  }
  ASSERT_TRUE(noise.Stop());
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(low_counts, 0u) << "counts at a past instant that were not exactly 10";
  EXPECT_EQ(admitted, 0u) << "checks at a past instant over the limit that were admitted";
}

// Random hits over the last two minutes, then random counts and checks at past instants, each
// compared with the brute-force log, while the same feature is checked live.
TEST_P(ConcurrentExactnessTest, RandomPastTracesCountExactlyWhileOthersWrite) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::string feature = "trace-" + std::to_string(seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> instant(kNow - 130, kNow - 1);
    testing::SlidingLog truth;
    for (int h = 0; h < 150; ++h) {
      const int64_t t = instant(rng);
      const uint64_t hits = 1 + rng() % 3;
      ASSERT_TRUE(engine_->Record(kEvent, feature, hits, FromUnix(t)).ok());
      truth.Add(t, hits);
    }
    LiveNoise noise(under_test_, feature, /*threads=*/1, /*processes=*/2);
    std::uniform_int_distribution<int64_t> length(1, 3700);
    uint64_t wrong_counts = 0, wrong_decisions = 0, errors = 0;
    for (int q = 0; q < testing::TraceSteps(400); ++q) {
      const int64_t t = instant(rng);
      const Window window = *Window::Sliding(Seconds{length(rng)});
      const uint64_t expected = truth.Window(t, window.length().count());
      Result<Counts> counts = engine_->Count(kEvent, feature, {&window, 1}, FromUnix(t));
      // At the limit, one more is denied; one below it, it is admitted and then counts.
      const uint64_t limit = expected + rng() % 2;
      const Policy policy = {
          {Limit{window, limit}}, CountingMode::kAdmitted, FailureMode::kFailClosed};
      Result<Decision> d = engine_->Check(kEvent, feature, policy, 1, FromUnix(t));
      if (!counts.ok() || !d.ok() || d->degraded) {
        ++errors;
        continue;
      }
      wrong_counts += counts->windows[0].count != expected;
      wrong_decisions += d->allowed != (limit > expected);
      if (d->allowed) truth.Add(t, 1);
    }
    ASSERT_TRUE(noise.Stop());
    EXPECT_EQ(errors, 0u) << "seed " << seed;
    EXPECT_EQ(wrong_counts, 0u) << "seed " << seed;
    EXPECT_EQ(wrong_decisions, 0u) << "seed " << seed;
  }
}

// Live checks whose day window holds all of today read the day ledger beside the buckets, while
// other threads and processes add hits and take them back: the ledger never runs ahead of the
// buckets where a check can see it (no decision says data was lost), and every count is exact.
TEST_P(ConcurrentExactnessTest, LiveChecksReadingTheDayLedgerSeeNoLossWhileOthersTakeBack) {
  const std::string feature = "ledger";
  const int64_t today = kNow - kNow % 86400;
  for (int64_t t : {today + 5, today + 3600 * 3 + 17, kNow - 600, kNow - 90}) {
    ASSERT_TRUE(engine_->Record(kEvent, feature, 2, FromUnix(t)).ok());
  }
  // One per minute (nearly every check is denied and taken back), and all of today.
  const Policy policy = {
      {Limit{*Window::Sliding(Seconds{60}), 1}, Limit{*Window::Sliding(Seconds{86400}), 1000}},
      CountingMode::kAdmitted,
      FailureMode::kFailClosed};
  LiveNoise noise(under_test_, feature, /*threads=*/2, /*processes=*/2, policy);
  uint64_t degraded = 0, wrong_days = 0, errors = 0, admitted = 0;
  for (int i = 0; i < testing::TraceSteps(1500); ++i) {
    Result<Decision> d = engine_->Check(kEvent, feature, policy);
    if (!d.ok()) {
      ++errors;
      continue;
    }
    degraded += d->degraded;
    admitted += d->allowed;
    // 8 recorded and one admitted at kNow, plus the hits of the other 4 checkers not yet taken
    // back; never fewer than the 8.
    const bool wrong = d->limits.size() != 2 || d->limits[1].count < 8 || d->limits[1].count > 13;
    if (wrong && wrong_days++ == 0) {
      ADD_FAILURE() << "day count " << (d->limits.size() == 2 ? d->limits[1].count : 0);
    }
  }
  ASSERT_TRUE(noise.Stop()) << "a live checker erred or saw lost data";
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(degraded, 0u) << "checks that said data was lost while none was";
  EXPECT_EQ(wrong_days, 0u);
  const std::vector<Window> day = {*Window::Sliding(Seconds{86400})};
  const uint64_t count = engine_->Count(kEvent, feature, day)->windows[0].count;
  EXPECT_TRUE(count == 8 || count == 9) << count << ": at most one admitted, all taken back";
  EXPECT_LE(admitted, 1u) << "one per minute";
}

INSTANTIATE_TEST_SUITE_P(StoresAndHotPath, ConcurrentExactnessTest,
                         ::testing::Combine(::testing::Values("memcached", "memcached_packed",
                                                              "memcached_replicated", "redis",
                                                              "lmdb"),
                                            ::testing::Values("off", "long_running")),
                         [](const ::testing::TestParamInfo<Config>& param) {
                           return std::get<0>(param.param) + "_" + std::get<1>(param.param);
                         });

}  // namespace
}  // namespace hourglass
