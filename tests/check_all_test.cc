// Engine::CheckAll: a request's checks stand or fall together. On random requests of several
// checks (repeated features, invalid and over-limit members, admitted and attempts mode, shadow
// members), on both stores, every decision and every count afterwards equal a brute-force model:
// a refused request changes nothing, a denied one keeps only its attempts-mode hits, an admitted
// one keeps all.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hourglass/engine.h"
#include "support/counting_store.h"
#include "support/sliding_log.h"
#include "support/store_harness.h"

namespace hourglass {
namespace {

using testing::SlidingLog;

const Policy kAdmitted{*ParseLimits("3/10s, 6/m"), CountingMode::kAdmitted};
const Policy kAttempts{*ParseLimits("4/m"), CountingMode::kAttempts};

struct Model {
  std::map<std::string, SlidingLog> logs;  // by event + "/" + feature

  static bool Fits(const SlidingLog& log, const Policy& p, int64_t t, uint64_t hits) {
    for (const Limit& l : p.limits) {
      if (log.Window(t, l.window.length().count()) + hits > l.max_hits) return false;
    }
    return true;
  }
};

class CheckAllTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    harness_ = testing::MakeHarness(GetParam());
    ASSERT_NE(harness_, nullptr);
    engine_ = std::make_unique<Engine>(EngineOn(harness_->store()));
  }
  // An engine with the hot-path caches of a long-running service, on `store` and the harness's
  // clock.
  Engine EngineOn(Store& store) {
    EngineOptions options;
    options.hot_path = HotPathOptions::LongRunning(1024);
    return *Engine::Create(store, harness_->clock(), std::move(options));
  }
  uint64_t CountOf(const std::string& event, const std::string& feature, Seconds w, Instant at) {
    const Window window = *Window::Sliding(w);
    Result<Counts> counts = engine_->Count(event, feature, {&window, 1}, at);
    EXPECT_TRUE(counts.ok()) << counts.error().ToString();
    return counts.ok() ? counts->windows[0].count : 0;
  }

  std::unique_ptr<testing::StoreHarness> harness_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(CheckAllTest, RandomRequestsStandOrFallTogetherAsABruteForceModelSays) {
  std::mt19937 rng(20261124);
  const std::string too_long(kMaxFieldBytes + 1, 'x');
  // Real time barely moves on memcached: more features keep some requests within their limits.
  std::vector<std::string> features = {"ann", "bob", "cy"};
  if (GetParam() != "memory") {
    for (int i = 0; i < 12; ++i) features.push_back("user" + std::to_string(i));
  }
  Model model;
  const int requests = GetParam() == "memory" ? 400 : 120;
  int denied = 0, refused = 0, admitted = 0;
  for (int n = 0; n < requests; ++n) {
    if (GetParam() == "memory" && rng() % 3 == 0) harness_->Advance(Seconds{rng() % 7});
    const size_t size = 1 + rng() % 4;
    std::vector<std::string> events, feats;
    std::vector<Engine::CheckRequest> checks(size);
    bool invalid = false;
    for (size_t i = 0; i < size; ++i) {
      events.push_back(rng() % 3 == 0 ? "b" : "a");
      feats.push_back(rng() % 25 == 0 ? too_long : features[rng() % features.size()]);
      invalid = invalid || feats.back().size() > kMaxFieldBytes;
    }
    for (size_t i = 0; i < size; ++i) {
      checks[i].event = events[i];
      checks[i].feature = feats[i];
      checks[i].policy = events[i] == "a" ? &kAdmitted : &kAttempts;
      checks[i].hits = 1 + rng() % 2;
      checks[i].binding = rng() % 8 != 0;
    }
    const Result<Engine::RequestDecision> decided = engine_->CheckAll(checks);
    if (invalid) {
      ASSERT_FALSE(decided.ok()) << "request " << n;
      EXPECT_EQ(decided.error().code(), ErrorCode::kInvalidArgument);
      ++refused;
      continue;  // nothing written: the counts below still match the model
    }
    ASSERT_TRUE(decided.ok()) << decided.error().ToString();
    const int64_t t = ToUnix(decided->decisions.front().at);
    // The model decides the checks in order, each seeing the hits of the ones before it.
    std::map<std::string, SlidingLog> tentative = model.logs;
    bool all = true;
    for (size_t i = 0; i < size; ++i) {
      const std::string key = events[i] + "/" + feats[i];
      const bool fits = Model::Fits(tentative[key], *checks[i].policy, t, checks[i].hits);
      EXPECT_EQ(decided->decisions[i].allowed, fits) << "request " << n << " check " << i;
      if (fits || checks[i].policy->mode == CountingMode::kAttempts) {
        tentative[key].Add(t, checks[i].hits);
      }
      all = all && (fits || !checks[i].binding);
    }
    EXPECT_EQ(decided->allowed, all) << "request " << n;
    if (all) {
      model.logs = std::move(tentative);
      ++admitted;
    } else {  // only the attempts-mode hits stay
      ++denied;
      for (size_t i = 0; i < size; ++i) {
        if (checks[i].policy->mode == CountingMode::kAttempts) {
          model.logs[events[i] + "/" + feats[i]].Add(t, checks[i].hits);
        }
        if (checks[i].policy->mode == CountingMode::kAdmitted) {
          EXPECT_FALSE(decided->decisions[i].recorded) << "request " << n << " check " << i;
        }
      }
    }
    for (const std::string e : {"a", "b"}) {
      for (const std::string& f : features) {
        EXPECT_EQ(CountOf(e, f, Seconds{60}, FromUnix(t)), model.logs[e + "/" + f].Window(t, 60))
            << "request " << n << " " << e << "/" << f;
      }
    }
  }
  EXPECT_GT(denied, 5);
  EXPECT_GT(refused, 2);
  EXPECT_GT(admitted, 5);
}

TEST_P(CheckAllTest, ADeniedRequestTakesBackItsAdmittedChecksAndSaysSo) {
  const Policy one{*ParseLimits("1/h")};
  const Policy roomy{*ParseLimits("100/h")};
  ASSERT_TRUE(engine_->Check("signup", "ann@example.com", one).ok());  // the account is used up
  const std::vector<Engine::CheckRequest> checks = {{"url_shorten", "203.0.113.7", roomy},
                                                    {"signup", "ann@example.com", one}};
  Result<Engine::RequestDecision> d = engine_->CheckAll(checks);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_TRUE(d->decisions[0].allowed) << "the address itself had room";
  EXPECT_FALSE(d->decisions[0].recorded);
  EXPECT_EQ(d->decisions[0].limits[0].count, 0u) << "its count leaves the taken-back hit out";
  EXPECT_EQ(d->decisions[0].limits[0].remaining, 100u);
  EXPECT_FALSE(d->decisions[1].allowed);
  const Instant now = harness_->clock().Now();
  EXPECT_EQ(CountOf("url_shorten", "203.0.113.7", Seconds{3600}, now), 0u);
  EXPECT_EQ(CountOf("signup", "ann@example.com", Seconds{3600}, now), 1u);
}

TEST_P(CheckAllTest, AShadowMemberDeniedDoesNotDenyTheRequest) {
  const Policy none{*ParseLimits("0/h")};
  const Policy roomy{*ParseLimits("100/h")};
  std::vector<Engine::CheckRequest> checks = {{"trial", "x", none}, {"real", "x", roomy}};
  checks[0].binding = false;
  Result<Engine::RequestDecision> d = engine_->CheckAll(checks);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_FALSE(d->decisions[0].allowed);
  EXPECT_TRUE(d->decisions[1].recorded);
  EXPECT_EQ(CountOf("real", "x", Seconds{3600}, harness_->clock().Now()), 1u);
  EXPECT_EQ(CountOf("trial", "x", Seconds{3600}, harness_->clock().Now()), 0u);
}

// Envoy's way: a request one binding check of which the blocked-client cache knows to be denied
// is denied at once when its other checks would record nothing in a denied request. They are
// unread, the store sees nothing of the request, and its counts are what CheckAll would leave.
TEST_P(CheckAllTest, ARequestOneCheckOfWhichIsKnownDeniedIsDeniedWithoutTheStore) {
  testing::CountingStore counting(harness_->store());
  const Engine engine = EngineOn(counting);
  const Policy one{*ParseLimits("1/m"), CountingMode::kAdmitted};
  std::vector<Engine::CheckRequest> request = {{"per_ip", "10.0.0.1", one},
                                               {"per_account", "ann", kAdmitted}};
  ASSERT_TRUE(engine.CheckAll(request)->allowed);
  ASSERT_FALSE(engine.CheckAll(request)->allowed) << "1/m used: per_ip denied and remembered";
  EXPECT_FALSE(engine.CheckAllIfBlocked(request).has_value()) << "per_account is not known denied";

  const int applies = counting.applies + counting.apply_manys;
  const size_t sends = counting.sends().size();
  std::optional<Engine::RequestDecision> local =
      engine.CheckAllIfBlocked(request, Engine::LocalScope::kAnyBindingDenial);
  ASSERT_TRUE(local.has_value());
  EXPECT_FALSE(local->allowed);
  ASSERT_EQ(local->decisions.size(), 2u);
  EXPECT_FALSE(local->decisions[0].allowed);
  EXPECT_EQ(local->decisions[0].cost.blocked_hits, 1u);
  EXPECT_FALSE(local->decisions[0].unread);
  EXPECT_TRUE(local->decisions[1].unread);
  EXPECT_FALSE(local->decisions[1].allowed);
  EXPECT_FALSE(local->decisions[1].recorded);
  EXPECT_TRUE(local->decisions[1].limits.empty());
  EXPECT_EQ(counting.applies + counting.apply_manys, applies) << "nothing read";
  EXPECT_EQ(counting.sends().size(), sends) << "nothing written";
  const Window minute = *Window::Sliding(Seconds{60});
  Result<Counts> ann = engine.Count("per_account", "ann", {&minute, 1});
  ASSERT_TRUE(ann.ok());
  EXPECT_EQ(ann->windows[0].count, 1u) << "only the first, admitted request counts";

  // Not where a denied request records something of another check, nor for a shadow's denial.
  const int counted = counting.applies + counting.apply_manys;
  request[1].policy = &kAttempts;
  EXPECT_FALSE(engine.CheckAllIfBlocked(request, Engine::LocalScope::kAnyBindingDenial));
  request[1].policy = &kAdmitted;
  request[0].binding = false;
  EXPECT_FALSE(engine.CheckAllIfBlocked(request, Engine::LocalScope::kAnyBindingDenial));
  EXPECT_EQ(counting.applies + counting.apply_manys, counted) << "nothing read when not decided";
}

// A request of one check is answered without the store exactly when that check is known denied:
// as the store's answer denied it, attempts mode recording the attempt, a shadow's denial
// denying nothing.
TEST_P(CheckAllTest, AOneCheckRequestKnownDeniedIsAnsweredAsTheStoreDeniedIt) {
  testing::CountingStore counting(harness_->store());
  const Engine engine = EngineOn(counting);
  const Policy one{*ParseLimits("1/m, 5/h"), CountingMode::kAdmitted};
  std::vector<Engine::CheckRequest> request = {{"per_ip", "10.0.0.1", one}};
  EXPECT_FALSE(engine.CheckAllIfBlocked(request).has_value()) << "never seen: not known denied";
  ASSERT_TRUE(engine.CheckAll(request)->allowed);
  const Engine::RequestDecision stored = *engine.CheckAll(request);
  ASSERT_FALSE(stored.allowed) << "1/m used: denied and remembered";

  const int applies = counting.applies + counting.apply_manys;
  const size_t sends = counting.sends().size();
  std::optional<Engine::RequestDecision> local = engine.CheckAllIfBlocked(request);
  ASSERT_TRUE(local.has_value());
  EXPECT_FALSE(local->allowed);
  ASSERT_EQ(local->decisions.size(), 1u);
  const Decision& d = local->decisions[0];
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.recorded);
  EXPECT_EQ(d.cost.blocked_hits, 1u);
  EXPECT_EQ(d.retry_after, stored.decisions[0].retry_after);
  ASSERT_EQ(d.limits.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(d.limits[i].count, stored.decisions[0].limits[i].count) << i;
    EXPECT_EQ(d.limits[i].exceeded, stored.decisions[0].limits[i].exceeded) << i;
  }
  EXPECT_EQ(counting.applies + counting.apply_manys, applies) << "nothing read";
  EXPECT_EQ(counting.sends().size(), sends) << "nothing written";

  request[0].binding = false;  // a shadow's denial
  local = engine.CheckAllIfBlocked(request);
  ASSERT_TRUE(local.has_value());
  EXPECT_TRUE(local->allowed);
  EXPECT_FALSE(local->decisions[0].allowed);
  request[0].binding = true;
  request[0].at = harness_->clock().Now() - Seconds{1};  // not now: the store decides
  EXPECT_FALSE(engine.CheckAllIfBlocked(request).has_value());

  // Attempts mode: the blocked attempt is written, not read.
  const Policy attempts{*ParseLimits("1/m"), CountingMode::kAttempts};
  request = {{"login", "ann", attempts}};
  ASSERT_TRUE(engine.CheckAll(request)->allowed);
  ASSERT_FALSE(engine.CheckAll(request)->allowed);
  const int read = counting.applies + counting.apply_manys;
  local = engine.CheckAllIfBlocked(request);
  ASSERT_TRUE(local.has_value());
  EXPECT_FALSE(local->allowed);
  EXPECT_TRUE(local->decisions[0].recorded);
  EXPECT_EQ(counting.applies + counting.apply_manys, read) << "nothing read";
  EXPECT_EQ(CountOf("login", "ann", Seconds{60}, harness_->clock().Now()), 3u);
}

INSTANTIATE_TEST_SUITE_P(Stores, CheckAllTest,
                         ::testing::Values("memory", "memcached", "memcached_packed", "redis",
                                           "lmdb"),
                         [](const auto& param_info) { return param_info.param; });

// A denied request's take-backs go out fire-and-forget by default (Store::Send) and are awaited
// with confirm_take_backs (Store::ApplyMany), so that no later check of the feature, sent on
// another connection, can read the hit before it is taken back. The counts are the same either way.
TEST(CheckAllTakeBacks, ConfirmedTakeBacksAreAwaitedAndLeaveTheSameCounts) {
  int extra_applies[2] = {0, 0};
  for (const bool confirm : {false, true}) {
    SCOPED_TRACE(confirm ? "confirmed" : "fire-and-forget");
    testing::MemcachedHarness harness;
    testing::CountingStore counting(harness.store());
    EngineOptions options;
    options.confirm_take_backs = confirm;
    const Engine engine = *Engine::Create(counting, harness.clock(), std::move(options));
    const Policy one{*ParseLimits("1/m"), CountingMode::kAdmitted};
    const std::vector<Engine::CheckRequest> request = {{"per_ip", "10.0.0.1", one},
                                                       {"per_account", "ann", kAdmitted}};
    ASSERT_TRUE(engine.CheckAll(request)->allowed);
    const int applies = counting.applies + counting.apply_manys;
    ASSERT_FALSE(engine.CheckAll(request)->allowed) << "per_ip denied: both hits taken back";
    extra_applies[confirm] = counting.applies + counting.apply_manys - applies;
    EXPECT_EQ(counting.sends().empty(), confirm);
    harness.store().Flush();
    const Window minute = *Window::Sliding(Seconds{60});
    for (const Engine::CheckRequest& check : request) {
      Result<Counts> counts = engine.Count(check.event, check.feature, {&minute, 1});
      ASSERT_TRUE(counts.ok());
      EXPECT_EQ(counts->windows[0].count, 1u) << check.event << ": the first request's hit only";
    }
  }
  EXPECT_EQ(extra_applies[1], extra_applies[0] + 1) << "the take-backs, awaited";
}

// 8 threads send requests of two checks, one shared 30/h feature and one of their own, through
// real memcached: never more than 30 requests admitted, and afterwards every count equals what was
// admitted exactly (denied requests took back their own checks' hits, whatever the interleaving).
TEST(CheckAllConcurrency, ThreadsSharingAFeatureNeverOverAdmitAndCountsEqualTheAdmitted) {
  testing::MemcachedHarness harness;
  EngineOptions options;
  options.hot_path = HotPathOptions::LongRunning(1024);
  Engine engine = *Engine::Create(harness.store(), harness.clock(), options);
  const Policy shared{*ParseLimits("30/h")};
  const Policy own{*ParseLimits("1000/h")};
  constexpr int kThreads = 8, kRequests = 25;
  std::atomic<int> admitted{0};
  std::vector<int> admitted_of(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string mine = "own" + std::to_string(t);
      for (int r = 0; r < kRequests; ++r) {
        std::vector<Engine::CheckRequest> checks = {{"e", "shared", shared}, {"e", mine, own}};
        if (r % 2 == 1) std::swap(checks[0], checks[1]);  // either order
        Result<Engine::RequestDecision> d = engine.CheckAll(checks);
        if (d.ok() && d->allowed) {
          ++admitted;
          ++admitted_of[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(harness.store().Flush(), 0u) << "every take-back was applied";
  EXPECT_LE(admitted.load(), 30);
  EXPECT_GT(admitted.load(), 0);
  const Window hour = *Window::Sliding(Seconds{3600});
  const auto count = [&](const std::string& feature) {
    Result<Counts> c = engine.Count("e", feature, {&hour, 1});
    EXPECT_TRUE(c.ok());
    return c.ok() ? c->windows[0].count : 0;
  };
  EXPECT_EQ(count("shared"), static_cast<uint64_t>(admitted.load()));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(count("own" + std::to_string(t)), static_cast<uint64_t>(admitted_of[t])) << t;
  }
}

// The take-backs of every denied request in one batch go out in one Store::Send.
TEST(CheckAllSends, TheTakeBacksOfManyDeniedRequestsGoOutInOneSend) {
  testing::MemoryHarness harness;
  testing::CountingStore store(harness.store());
  EngineOptions options;
  options.hot_path = HotPathOptions::Off();
  Engine engine = *Engine::Create(store, harness.clock(), options);
  const Policy none{*ParseLimits("0/h")};
  const Policy roomy{*ParseLimits("100/h")};
  std::vector<std::string> features;
  for (int r = 0; r < 8; ++r) features.push_back("f" + std::to_string(r));
  std::vector<std::vector<Engine::CheckRequest>> requests;
  for (const std::string& f : features) requests.push_back({{"ok", f, roomy}, {"banned", f, none}});
  std::vector<std::span<const Engine::CheckRequest>> spans(requests.begin(), requests.end());
  std::vector<Result<Engine::RequestDecision>> decided = engine.CheckAllMany(spans);
  for (const auto& d : decided) {
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed);
  }
  EXPECT_EQ(store.applies.load(), 0) << "no store call outside the shared steps";
  EXPECT_EQ(store.apply_manys.load(), 1) << "one step read all 16 checks";
  EXPECT_EQ(store.sends(), (std::vector<size_t>{16})) << "all 16 take-backs in one send";
}

}  // namespace
}  // namespace hourglass
