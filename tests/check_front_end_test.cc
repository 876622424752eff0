// CheckFrontEnd, the way in of every protocol: requests without checks and clients denied
// moments ago are answered on the caller's thread without the store; requests from many threads
// (two protocols' I/O threads) share batches, each answered once with the decision a lone
// CheckAll gives; destroying the front end waits for every request in flight to be answered.
#include "hourglass/check_front_end.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "counting_store.h"
#include "hourglass/memcached_store.h"
#include "memcached_server.h"
#include "store_harness.h"

namespace hourglass {
namespace {

class CheckFrontEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << server_.error();
    MemcachedOptions options = testing::PatientMemcachedOptions();
    options.servers = {server_.address()};
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(*store);
    counting_ = std::make_unique<testing::CountingStore>(*store_);
    EngineOptions engine_options;
    engine_options.hot_path = HotPathOptions::LongRunning(1024);
    engine_ = std::make_unique<Engine>(
        *Engine::Create(*counting_, SystemClock::Get(), std::move(engine_options)));
  }

  testing::MemcachedServer server_;
  std::unique_ptr<MemcachedStore> store_;
  std::unique_ptr<testing::CountingStore> counting_;
  std::unique_ptr<Engine> engine_;
  const std::thread::id gathering_thread_ = std::this_thread::get_id();
};

TEST_F(CheckFrontEndTest, NoChecksAndBlockedClientsAreAnsweredAtOnceWithoutTheStore) {
  ServiceMetrics metrics;
  CheckFrontEnd front(*engine_, &metrics);
  const std::thread::id caller = std::this_thread::get_id();
  bool answered = false;
  front.Submit({}, [&](std::vector<OwnedCheck> checks, Result<Engine::RequestDecision> d) {
    answered = true;
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_TRUE(checks.empty());
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
  });
  EXPECT_TRUE(answered);
  const Policy one{*ParseLimits("1/m")};
  for (int i = 0; i < 2; ++i) {  // admitted, then denied: the client is now known as blocked
    std::atomic<bool> done{false};
    front.Submit({{"e", "ann", one, 1}},
                 [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision>) { done = true; });
    while (!done) std::this_thread::yield();
  }
  const int sends = counting_->applies + counting_->apply_manys;
  answered = false;
  front.Submit({{"e", "ann", one, 1}},
               [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> d) {
                 answered = true;
                 EXPECT_EQ(std::this_thread::get_id(), caller);
                 ASSERT_TRUE(d.ok());
                 EXPECT_FALSE(d->allowed);
                 EXPECT_EQ(d->decisions[0].cost.blocked_hits, 1u);
               });
  EXPECT_TRUE(answered) << "answered before Submit returned";
  EXPECT_EQ(counting_->applies + counting_->apply_manys, sends) << "nothing read";
}

// Submit in two steps: DecideAtOnce answers a blocked client (nullopt for any other, which goes
// to the store by SubmitToStore), and the sink hears of every decided request once either way.
TEST_F(CheckFrontEndTest, DecideAtOnceThenSubmitToStoreDecideAsSubmitDoes) {
  std::atomic<int> heard{0};
  CheckFrontEnd front(*engine_, nullptr,
                      [&](const std::vector<OwnedCheck>& checks, const Engine::RequestDecision&) {
                        EXPECT_EQ(checks.size(), 1u);
                        ++heard;
                      });
  const Policy one{*ParseLimits("1/m")};
  const std::vector<OwnedCheck> request = {{"e", "bob", one, 1}};
  for (bool admitted : {true, false}) {  // then known as blocked
    const int reads = counting_->applies + counting_->apply_manys;
    EXPECT_FALSE(front.DecideAtOnce(request).has_value()) << "not known denied yet";
    EXPECT_EQ(counting_->applies + counting_->apply_manys, reads) << "nothing read";
    std::atomic<bool> done{false};
    front.SubmitToStore(request, [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> d) {
      ASSERT_TRUE(d.ok());
      EXPECT_EQ(d->allowed, admitted);
      done = true;
    });
    while (!done) std::this_thread::yield();
  }
  EXPECT_EQ(heard, 2);
  const int reads = counting_->applies + counting_->apply_manys;
  std::optional<Engine::RequestDecision> at_once = front.DecideAtOnce(request);
  ASSERT_TRUE(at_once.has_value());
  EXPECT_FALSE(at_once->allowed);
  EXPECT_EQ(at_once->decisions[0].cost.blocked_hits, 1u);
  EXPECT_EQ(counting_->applies + counting_->apply_manys, reads) << "nothing read";
  EXPECT_EQ(heard, 3);
  ASSERT_TRUE(front.DecideAtOnce({}).has_value());
  EXPECT_TRUE(front.DecideAtOnce({})->allowed);
  EXPECT_EQ(heard, 3) << "a request without checks decides nothing the sink hears of";
}

// Requests of one feature are decided one after another, within a batch (a round holds distinct
// features) and across the front end's two batches at the store (one holds the feature at a time):
// the shared limit admits exactly its limit, on memcached too, and the store counts exactly what
// was admitted. Requests of distinct features share round trips.
TEST_F(CheckFrontEndTest, RequestsFromManyThreadsShareBatchesAndEachIsAnsweredOnce) {
  const Policy shared_limit{*ParseLimits("40/h")};
  const Policy roomy{*ParseLimits("1000/h")};
  constexpr int kThreads = 6, kRequests = 50;
  std::atomic<int> answered{0}, admitted_shared{0}, wrong{0};
  const auto submit_all = [&](bool shared) {
    CheckFrontEnd front(*engine_, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRequests; ++r) {
          std::vector<OwnedCheck> checks;
          checks.push_back({"e", "own" + std::to_string(t * kRequests + r), roomy, 1});
          if (shared) checks.push_back({"e", "shared", shared_limit, 1});
          front.Submit(std::move(checks), [&, shared](std::vector<OwnedCheck> decided_checks,
                                                      Result<Engine::RequestDecision> d) {
            ++answered;
            const size_t n = shared ? 2 : 1;
            if (decided_checks.size() != n || !d.ok() || d->decisions.size() != n ||
                !d->decisions[0].allowed || d->allowed != d->decisions.back().allowed) {
              ++wrong;
              return;
            }
            admitted_shared += shared && d->allowed ? 1 : 0;
          });
        }
      });
    }
    for (std::thread& t : threads) t.join();
  };  // the front end's destruction waits for every request in flight
  submit_all(/*shared=*/true);
  EXPECT_EQ(answered, kThreads * kRequests) << "each request answered once";
  EXPECT_EQ(admitted_shared, 40) << "the shared limit admits exactly its limit";
  store_->Flush();
  const Window hour = *Window::Sliding(Seconds{3600});
  Result<Counts> counts = engine_->Count("e", "shared", {&hour, 1});
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(counts->windows[0].count, static_cast<uint64_t>(admitted_shared.load()))
      << "the store counts exactly the admitted hits";
  const int before = counting_->apply_manys + counting_->applies;
  answered = 0;
  submit_all(/*shared=*/false);
  EXPECT_EQ(answered, kThreads * kRequests);
  EXPECT_EQ(wrong, 0);
  EXPECT_LT(counting_->apply_manys + counting_->applies - before, kThreads * kRequests)
      << "concurrent requests of distinct features shared round trips";
}

// What one read of a multiplexed connection brings: requests gathered on the I/O thread wait for
// the gathering's end, then go to the store together, sent (with hand_over) and answered off
// that thread; a request without checks is still answered at once.
TEST_F(CheckFrontEndTest, RequestsGatheredOnAThreadShareOneRoundTripOffThatThread) {
  const Policy policy{*ParseLimits("5/m")};
  std::atomic<int> answered{0}, on_this_thread{0}, wrong{0};
  const int before = counting_->apply_manys + counting_->applies;
  {
    CheckFrontEnd front(*engine_, nullptr);
    {
      CheckFrontEnd::Gather gather(front, /*hand_over=*/true);
      for (int i = 0; i < 20; ++i) {
        front.Submit({{"e", "gathered" + std::to_string(i), policy, 1}},
                     [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> d) {
                       if (!d.ok() || !d->allowed) ++wrong;
                       if (std::this_thread::get_id() == gathering_thread_) ++on_this_thread;
                       ++answered;
                     });
      }
      front.Submit({}, [&](std::vector<OwnedCheck>, Result<Engine::RequestDecision> d) {
        if (!d.ok() || !d->allowed) ++wrong;
        ++answered;
      });
      EXPECT_EQ(answered, 1) << "only the request without checks is answered while gathering";
    }
  }  // waits for them
  EXPECT_EQ(answered, 21);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(on_this_thread, 0) << "handed over: sent and answered by the front end's threads";
  EXPECT_EQ(counting_->apply_manys + counting_->applies - before, 1) << "one round trip for all";
}

}  // namespace
}  // namespace hourglass
