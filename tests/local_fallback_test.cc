// Checks decided in process while the store fails (on_store_failure local): two engines, each
// with its own LocalLedger and its own way to the store, sharing one store, on random traces
// whose outages take one engine or both off the store. Against a brute-force log of what was
// admitted: every local decision is exactly the share's; while the store answers every engine
// and no hits wait to be written back, every decision is a perfect limiter's; at no second does
// any window hold more than its limit plus both shares; and after the outages, the store counts
// exactly the hits the engines admitted.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "counting_store.h"
#include "failing_store.h"
#include "hourglass/engine.h"
#include "hourglass/local_ledger.h"
#include "hourglass/memory_store.h"
#include "sliding_log.h"

namespace hourglass {
namespace {

constexpr int64_t kStart = 1'700'000'000;
constexpr std::array<int64_t, 2> kWindows = {10, 60};
constexpr std::array<uint64_t, 2> kMax = {4, 11};

struct Side {
  std::unique_ptr<testing::FailingStore> way;
  std::unique_ptr<LocalLedger> ledger;
  std::unique_ptr<Engine> engine;
  bool down = false;
  std::map<std::string, testing::SlidingLog> local;  // what it admitted locally, per feature
};

class LocalFallbackTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    policy_.limits = *ParseLimits("4/10s, 11/m");
    policy_.on_store_failure = FailureMode::kLocal;
    for (Side& side : sides_) {
      side.way = std::make_unique<testing::FailingStore>(store_);
      side.ledger = std::make_unique<LocalLedger>(LocalLedgerOptions{.services = 2});
      EngineOptions options;
      options.fallback = side.ledger.get();
      options.hot_path = HotPathOptions::LongRunning(64);
      side.engine = std::make_unique<Engine>(*Engine::Create(*side.way, clock_, options));
    }
  }

  int64_t Now() const { return ToUnix(clock_.Now()); }
  // Whether `hits` more fit every window of `log` at now, under `max` scaled by `num`/2.
  bool Fits(const testing::SlidingLog& log, uint64_t num) const {
    for (size_t i = 0; i < kWindows.size(); ++i) {
      if (log.Window(Now(), kWindows[i]) + 1 > kMax[i] * num / 2) return false;
    }
    return true;
  }
  uint64_t Pending(const Side& side) const { return side.ledger->stats().pending_hits; }

  ManualClock clock_{FromUnix(kStart)};
  MemoryStore store_{clock_, GetParam()};
  Policy policy_;
  std::array<Side, 2> sides_;
  std::map<std::string, testing::SlidingLog> admitted_;  // per feature, by every engine
};

TEST_P(LocalFallbackTest, OutagesStayWithinTheSharesAndTheStoreCountsEveryAdmittedHitAfter) {
  std::mt19937_64 rng(GetParam() ? 7 : 11);
  const std::vector<std::string> features = {"a", "b", "c"};
  uint64_t local_decisions = 0, exact_decisions = 0, pairs = 0;
  for (int step = 0; step < 4000; ++step) {
    if (rng() % 3 == 0) clock_.Advance(Seconds{1});
    // Outages start for one engine and end, about 60 steps later.
    if (Side& side = sides_[rng() % 2]; rng() % (side.down ? 60 : 300) == 0) {
      side.down = !side.down;
      side.way->Fail(side.down);
      if (!side.down && rng() % 2 == 0) side.engine->WriteBackLocal();  // else its checks do
    }
    const size_t e = rng() % 2;
    Side& side = sides_[e];
    const Side& other = sides_[1 - e];
    // Exact when the store answers this engine and the other holds nothing unwritten: this
    // engine's own pending hits are written back before its check reads.
    const bool exact = !side.down && Pending(other) == 0;
    std::vector<std::string> checked = {features[rng() % features.size()]};
    if (rng() % 4 == 0) checked.push_back("all");  // a request of two checks
    std::vector<Engine::CheckRequest> requests;
    for (const std::string& f : checked) requests.emplace_back("url", f, policy_);
    Result<Engine::RequestDecision> d = side.engine->CheckAll(requests);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    bool fits = true;
    for (size_t k = 0; k < checked.size(); ++k) {
      const Decision& one = d->decisions[k];
      if (one.local) {
        ++local_decisions;
        ASSERT_TRUE(side.down || one.store_error) << "local only when the store failed";
        EXPECT_EQ(one.allowed, Fits(side.local[checked[k]], 1)) << "step " << step;
      } else if (exact) {
        ++exact_decisions;
        ASSERT_FALSE(one.degraded) << one.store_error->ToString();
        EXPECT_EQ(one.allowed, Fits(admitted_[checked[k]], 2)) << "step " << step;
      }
      fits = fits && one.allowed;
    }
    ASSERT_EQ(d->allowed, fits);
    pairs += checked.size() > 1 ? 1 : 0;
    if (!d->allowed) continue;
    for (size_t k = 0; k < checked.size(); ++k) {
      admitted_[checked[k]].Add(Now());
      if (d->decisions[k].local) side.local[checked[k]].Add(Now());
    }
  }
  EXPECT_GT(local_decisions, 300u);
  EXPECT_GT(exact_decisions, 2000u);
  EXPECT_GT(pairs, 500u);

  // No window ever held more than its limit and both shares.
  for (const auto& [feature, log] : admitted_) {
    for (int64_t t = kStart; t <= Now(); ++t) {
      for (size_t i = 0; i < kWindows.size(); ++i) {
        ASSERT_LE(log.Window(t, kWindows[i]), kMax[i] + 2 * (kMax[i] / 2)) << feature << " " << t;
      }
    }
  }
  // The store answers again: once written back, it counts every hit admitted, locally or not.
  for (Side& side : sides_) {
    side.way->Fail(false);
    const Engine::WriteBack written = side.engine->WriteBackLocal();
    EXPECT_EQ(written.failed, 0u);
    EXPECT_EQ(Pending(side), 0u);
  }
  const std::vector<Window> windows = {*Window::Sliding(Seconds{10}), *Window::Sliding(Seconds{60}),
                                       *Window::Sliding(Seconds{86400})};
  for (const auto& [feature, log] : admitted_) {
    Result<Counts> counts = sides_[0].engine->Count("url", feature, windows);
    ASSERT_TRUE(counts.ok());
    EXPECT_EQ(counts->windows[0].count, log.Window(Now(), 10)) << feature;
    EXPECT_EQ(counts->windows[1].count, log.Window(Now(), 60)) << feature;
    EXPECT_EQ(counts->windows[2].count, log.Window(Now(), 86400)) << feature;
  }
}

// A check after the store returns writes its feature's local hits back before it reads, so it
// counts them; a check of another feature leaves them to the periodic write-back.
TEST_P(LocalFallbackTest, TheFirstCheckAfterAnOutageCountsTheHitsDecidedLocally) {
  Side& side = sides_[0];
  side.way->Fail(true);
  for (int i = 0; i < 5; ++i) {
    Result<Decision> d = side.engine->Check("url", "a", policy_);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->degraded && d->local);
    EXPECT_EQ(d->allowed, i < 2) << "2 of 4 per 10 s";
    EXPECT_EQ(d->recorded, i < 2);
    ASSERT_EQ(d->limits.size(), 2u);
    EXPECT_EQ(d->limits[0].count, std::min(i + 1, 2)) << "counted against the share";
    EXPECT_FALSE(d->limits[0].exact);
    if (!d->allowed) {
      EXPECT_EQ(d->retry_after, Seconds{10});
    }
    EXPECT_NE(d->store_error->message().find("1/2 of each limit"), std::string::npos)
        << d->store_error->message();
  }
  side.way->Fail(false);
  Result<Decision> b = side.engine->Check("url", "b", policy_);
  ASSERT_TRUE(b.ok() && !b->degraded);
  EXPECT_EQ(side.ledger->stats().pending_hits, 2u) << "b's check writes back none of a's";
  Result<Decision> a = side.engine->Check("url", "a", policy_);
  ASSERT_TRUE(a.ok() && !a->degraded);
  EXPECT_EQ(a->limits[0].count, 3u) << "the 2 local hits and this one";
  EXPECT_EQ(side.ledger->stats().pending_hits, 0u);
  EXPECT_EQ(side.ledger->stats().written_back, 2u);
}

// While the write-back itself fails, the check is decided locally; a denied request's locally
// admitted check is taken back.
TEST_P(LocalFallbackTest, ADeniedRequestLeavesNothingHeldLocally) {
  Side& side = sides_[0];
  Policy tight = policy_;
  tight.limits = *ParseLimits("2/m");  // 1 per engine
  side.way->Fail(true);
  const Engine::CheckRequest first[] = {{"url", "x", tight}};
  ASSERT_TRUE(side.engine->CheckAll(first)->allowed);
  const Engine::CheckRequest both[] = {{"url", "y", tight}, {"url", "x", tight}};
  Result<Engine::RequestDecision> d = side.engine->CheckAll(both);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_TRUE(d->decisions[0].allowed && d->decisions[0].local);
  EXPECT_FALSE(d->decisions[0].recorded) << "taken back: its request was denied";
  EXPECT_EQ(side.ledger->stats().pending_hits, 1u) << "x's first hit only";
}

// Threads check while every third store call fails under them, and another thread writes back:
// once written back, the store counts exactly the hits the decisions say stay recorded (locally
// or in the store: a failed take-back leaves one there), and no feature admits more than its
// limit plus the local share.
TEST_P(LocalFallbackTest, ThreadsCheckingWhileTheStoreFailsUnderThemLoseNoHit) {
  Side& side = sides_[0];
  Policy policy = policy_;
  policy.limits = *ParseLimits("40/m");  // one instant: the limit binds; the share is 20
  side.way->FailEvery(3);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> admitted[3] = {}, recorded[3] = {}, local = 0;
  std::thread writer([&] {
    while (!done) side.engine->WriteBackLocal();
  });
  std::vector<std::thread> checkers;
  for (int c = 0; c < 4; ++c) {
    checkers.emplace_back([&, c] {
      for (int i = 0; i < 300; ++i) {
        const size_t f = static_cast<size_t>(i + c) % 3;
        Result<Decision> d = side.engine->Check("url", "f" + std::to_string(f), policy);
        ASSERT_TRUE(d.ok());
        admitted[f] += d->allowed ? 1 : 0;
        recorded[f] += d->recorded ? 1 : 0;
        local += d->local ? 1 : 0;
      }
    });
  }
  for (std::thread& t : checkers) t.join();
  done = true;
  writer.join();
  side.way->FailEvery(0);
  EXPECT_EQ(side.engine->WriteBackLocal().failed, 0u);
  EXPECT_EQ(side.ledger->stats().pending_hits, 0u);
  EXPECT_GE(local.load(), 10u) << "a third of the store calls fail";
  const Window minute = *Window::Sliding(Seconds{60});
  for (size_t f = 0; f < 3; ++f) {
    Result<Counts> counts = side.engine->Count("url", "f" + std::to_string(f), {&minute, 1});
    ASSERT_TRUE(counts.ok());
    EXPECT_EQ(counts->windows[0].count, recorded[f].load()) << "f" << f;
    EXPECT_LE(admitted[f].load(), 40u + 20u) << "f" << f;
    EXPECT_GE(admitted[f].load(), 40u) << "f" << f;
  }
}

// A client the blocked-client cache denies is answered without the store, even while its
// feature's local hits (of another policy) wait to be written back: no write-back holds up an
// answer that needs no store.
TEST_P(LocalFallbackTest, AClientDeniedFromTheCacheWaitsForNoWriteBack) {
  Side& side = sides_[0];
  testing::CountingStore counting(*side.way);
  EngineOptions options;
  options.fallback = side.ledger.get();
  options.hot_path = HotPathOptions::LongRunning(64);
  const Engine engine = *Engine::Create(counting, clock_, options);
  Policy tight = policy_;
  tight.limits = *ParseLimits("1/m");
  ASSERT_TRUE(engine.Check("url", "x", tight)->allowed);
  ASSERT_FALSE(engine.Check("url", "x", tight)->allowed);  // x is in the blocked-client cache
  side.way->Fail(true);
  ASSERT_TRUE(engine.Check("url", "x", policy_)->local);  // x's hit waits to be written back
  ASSERT_TRUE(side.ledger->AnyPending());
  const int before = counting.applies + counting.apply_manys;
  std::optional<Decision> cached = engine.CheckIfBlocked("url", "x", tight);
  ASSERT_TRUE(cached.has_value());
  EXPECT_FALSE(cached->allowed);
  const Engine::CheckRequest request[] = {{"url", "x", tight}};
  EXPECT_TRUE(engine.CheckAllIfBlocked(request).has_value());
  EXPECT_EQ(counting.applies + counting.apply_manys, before) << "nothing asked of the store";
}

// Before the services sharing the store are counted, a local check is denied and says why.
TEST_P(LocalFallbackTest, UncountedServicesDenyLocallyAndSayWhy) {
  LocalLedger uncounted({.services = 0});
  testing::FailingStore way(store_);
  EngineOptions options;
  options.fallback = &uncounted;
  const Engine engine = *Engine::Create(way, clock_, options);
  way.Fail(true);
  Result<Decision> d = engine.Check("url", "a", policy_);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->local);
  EXPECT_FALSE(d->allowed);
  EXPECT_NE(d->store_error->message().find("how many services share the store is not known yet"),
            std::string::npos)
      << d->store_error->message();
  uncounted.SetServices(2);
  EXPECT_TRUE(engine.Check("url", "a", policy_)->allowed) << "2 of 4 per 10 s, once counted";
}

// Without a fallback (a CLI call), local is closed.
TEST_P(LocalFallbackTest, WithoutAFallbackLocalDenies) {
  testing::FailingStore way(store_);
  Engine engine = *Engine::Create(way, clock_, EngineOptions{});
  way.Fail(true);
  Result<Decision> d = engine.Check("url", "a", policy_);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->degraded);
  EXPECT_FALSE(d->allowed || d->local);
}

INSTANTIATE_TEST_SUITE_P(Stores, LocalFallbackTest, ::testing::Bool(),
                         [](const auto& param) { return param.param ? "Atomic" : "Plain"; });

TEST(Share, ParsesFractionsAndDecimalsAndScalesDown) {
  EXPECT_EQ(*ParseShare("1/3"), (Share{1, 3}));
  EXPECT_EQ(*ParseShare("2/4"), (Share{1, 2}));
  EXPECT_EQ(*ParseShare("0.25"), (Share{1, 4}));
  EXPECT_EQ(*ParseShare("1"), (Share{1, 1}));
  EXPECT_EQ(ParseShare("1/3")->Of(10), 3u);
  EXPECT_EQ(ParseShare("1/3")->Of(2), 0u);
  EXPECT_EQ((Share{2, 3}).Of(UINT64_MAX), UINT64_MAX / 3 * 2);
  EXPECT_EQ((Share{1, 3}).ToString(), "1/3");
  for (const char* bad : {"0", "3/2", "1/0", "-1", "1.5", "x", "", "0.0"}) {
    Result<Share> share = ParseShare(bad);
    ASSERT_FALSE(share.ok()) << bad;
    EXPECT_NE(share.error().message().find("such as 1/3"), std::string::npos)
        << share.error().message();
  }
}

}  // namespace
}  // namespace hourglass
