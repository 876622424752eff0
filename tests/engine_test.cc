// The engine against every store (in-memory, taking guarded batches or not, real memcached in both
// layouts, real Redis, LMDB), driven by a manual clock:
// exact counts on a 2-day random trace, decisions identical to a perfect sliding-window limiter,
// counting modes, costs, reset, hostile features and store failures.
#include "hourglass/engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>
#include <regex>

#include "failing_store.h"
#include "hourglass/key_space.h"
#include "hourglass/memcached_store.h"
#include "sliding_log.h"
#include "store_harness.h"
#include "trace_length.h"

namespace hourglass {
namespace {

using testing::SlidingLog;
using testing::TraceDivisor;
using testing::TraceSteps;

constexpr int64_t kStart = 1'431'820'800;  // 2015-05-17 00:00:00 UTC

// Store kind x engine configuration: "plain" (exact cover in one round trip, no cache) or "hot"
// (bounds, immutable-bucket cache and blocked-client cache: the hot path).
using Config = std::tuple<std::string, std::string>;

class EngineTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    harness_ = testing::MakeHarness(std::get<0>(GetParam()));
    ASSERT_FALSE(HasFailure());
    clock_ = &testing::ManualClockFor(*harness_, own_clock_, FromUnix(kStart));
  }

  bool hot() const { return std::get<1>(GetParam()) == "hot"; }
  // The engine options of this configuration.
  EngineOptions Options() const {
    EngineOptions options;
    options.exact_retry_after = true;  // the properties check it to the second
    options.hot_path = hot() ? HotPathOptions::LongRunning(1024) : HotPathOptions::Off();
    return options;
  }
  Engine MakeEngine() { return MakeEngine(Options()); }
  Engine MakeEngine(EngineOptions options) {
    Result<Engine> engine = Engine::Create(harness_->store(), *clock_, options);
    EXPECT_TRUE(engine.ok());
    return std::move(*engine);
  }
  static std::vector<Window> Windows(std::initializer_list<int64_t> seconds) {
    std::vector<Window> out;
    for (int64_t s : seconds) out.push_back(*Window::Sliding(Seconds{s}));
    return out;
  }
  static Policy MakePolicy(std::string_view limits, CountingMode mode = CountingMode::kAdmitted) {
    return Policy{*ParseLimits(limits), mode, FailureMode::kFailOpen};
  }

  // Three admitted signups by "ann" at kStart, +10 s and +20 s, then the check at +30 s that
  // `policy` (3/m) denies.
  Result<Decision> FillThenCheck(const Engine& engine, const Policy& policy) {
    for (int i = 0; i < 3; ++i) {
      clock_->Set(FromUnix(kStart + 10 * i));
      EXPECT_TRUE(engine.Check("signup", "ann", policy)->allowed);
    }
    clock_->Set(FromUnix(kStart + 30));
    return engine.Check("signup", "ann", policy);
  }

  // Checks `feature` at bursty instants from `from` to `to` (seeded by `seed`): each decided as a
  // perfect limiter counting every window's span (Window::SpanAt) over the hits admitted so far,
  // into `admitted`, and each exact count equal to those hits; `denied` counts the denials. Gaps
  // between checks are `stretch` times the bursty client's: the same span in fewer checks.
  void DecideAsAPerfectLimiter(const Engine& engine, const Policy& policy,
                               const std::string& feature, int64_t from, int64_t to, uint64_t seed,
                               SlidingLog& admitted, int& denied, int64_t stretch = 1);

  // Items alive in the store: the memory store's keys, memcached's own curr_items, Redis's keys.
  long long LiveItems() {
    if (auto* memcached = dynamic_cast<testing::MemcachedHarness*>(harness_.get())) {
      return memcached->server().Stat("curr_items");
    }
    if (auto* redis = dynamic_cast<testing::RedisHarness*>(harness_.get())) {
      return std::atoll(redis->server().Command({"DBSIZE"}).c_str());
    }
    if (auto* lmdb = dynamic_cast<testing::LmdbHarness*>(harness_.get())) {
      return static_cast<long long>(lmdb->lmdb().Stats().front()->curr_items);
    }
    return static_cast<long long>(dynamic_cast<MemoryStore&>(harness_->store()).LiveKeys());
  }

  std::unique_ptr<testing::StoreHarness> harness_;
  std::unique_ptr<ManualClock> own_clock_;
  ManualClock* clock_ = nullptr;
};

TEST_P(EngineTest, TtlCoversRetentionPlusTheParentWidthPlusTheMargin) {
  const Engine engine = MakeEngine();
  EXPECT_EQ(engine.keys().Ttl(0), Seconds{86400 + 60 + 5});
  EXPECT_EQ(engine.keys().Ttl(1), Seconds{86400 + 3600 + 5});
  EXPECT_EQ(engine.keys().Ttl(2), Seconds{86400 + 3600 + 5});
}

TEST_P(EngineTest, RecordThenCount) {
  const Engine engine = MakeEngine();
  Result<Cost> cost = engine.Record("signup", "ann@example.com");
  ASSERT_TRUE(cost.ok()) << cost.error().ToString();
  EXPECT_EQ(*cost, (Cost{5, 0, 1})) << "three buckets and the day ledger's two counters, "
                                       "confirmed by the store's answer, nothing read back";
  clock_->Advance(Seconds{30});
  ASSERT_TRUE(engine.Record("signup", "ann@example.com", 2).ok());
  Result<Counts> counts = engine.Count("signup", "ann@example.com", Windows({1, 30, 31, 86400}));
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(counts->windows[0].count, 2u);
  EXPECT_EQ(counts->windows[1].count, 2u);
  EXPECT_EQ(counts->windows[2].count, 3u);
  EXPECT_EQ(counts->windows[3].count, 3u);
  EXPECT_EQ(counts->cost.round_trips, 1u);
  EXPECT_EQ(counts->cost.keys_written, 0u);
}

// Exactness: a 2-day random trace, counts for 1s/1m/1h/1d at thousands of
// instants (live and in the past) equal the brute-force sliding-log count.
TEST_P(EngineTest, TwoDayRandomTraceCountsEqualTheSlidingLog) {
  EngineOptions options = Options();
  options.retention = Seconds{3 * 86400};  // keep every bucket of the trace for the past queries
  const Engine engine = MakeEngine(options);
  const std::vector<Window> windows = Windows({1, 60, 3600, 86400});
  std::mt19937_64 rng(42);
  SlidingLog log, other_log;
  int64_t t = kStart;
  const int64_t end = kStart + 2 * 86400;
  int live_queries = 0;
  while (t < end) {
    // Bursty traffic: mostly gaps of a few seconds, sometimes long pauses, sometimes same-second.
    const uint64_t r = rng() % 100;
    const int64_t gap = r < 30   ? 0
                        : r < 98 ? static_cast<int64_t>(rng() % 12)
                                 : static_cast<int64_t>(rng() % 600);
    t += gap * TraceDivisor();  // short traces: the same two days, a quarter of the hits
    if (t >= end) break;
    clock_->Set(FromUnix(t));
    const uint64_t cost = 1 + rng() % 3;
    const bool other = rng() % 5 == 0;
    const Result<Cost> recorded =
        engine.Record("url_shorten", other ? "10.0.0.2" : "10.0.0.1", cost);
    ASSERT_TRUE(recorded.ok()) << "at " << t << ": " << recorded.error().ToString();
    (other ? other_log : log).Add(t, cost);
    if (rng() % 8 == 0) {  // a live query, at now or a few seconds later
      clock_->Set(FromUnix(t + static_cast<int64_t>(rng() % 5)));
      Result<Counts> counts = engine.Count("url_shorten", "10.0.0.1", windows);
      ASSERT_TRUE(counts.ok()) << counts.error().ToString();
      const int64_t now = ToUnix(clock_->Now());
      for (size_t i = 0; i < windows.size(); ++i) {
        ASSERT_EQ(counts->windows[i].count, log.Window(now, windows[i].length().count()))
            << "live, now " << now << " window " << windows[i].ToString();
      }
      ++live_queries;
      clock_->Set(FromUnix(t));
    }
  }
  EXPECT_GT(live_queries, 1000 / TraceDivisor());
  // Past queries: exact although later hits exist.
  for (int q = 0; q < TraceSteps(2000); ++q) {
    const int64_t at = kStart + static_cast<int64_t>(rng() % (2 * 86400 + 100));
    Result<Counts> counts = engine.Count("url_shorten", "10.0.0.1", windows, FromUnix(at));
    ASSERT_TRUE(counts.ok()) << counts.error().ToString();
    for (size_t i = 0; i < windows.size(); ++i) {
      ASSERT_EQ(counts->windows[i].count, log.Window(at, windows[i].length().count()))
          << "past, at " << at << " window " << windows[i].ToString();
    }
    Result<Counts> others = engine.Count("url_shorten", "10.0.0.2", windows, FromUnix(at));
    ASSERT_TRUE(others.ok());
    ASSERT_EQ(others->windows[3].count, other_log.Window(at, 86400));
  }
}

// Exactness through busy hours: a hit or three most seconds for two hours, so that memcached's
// packed layout compacts each hour into bases again and again (checked). Live counts at the
// writer, then counts by a reader that never read the store (a fresh client, no base kept),
// equal the brute-force sliding log in every window.
TEST_P(EngineTest, BusyHoursCountEqualTheSlidingLogForTheWriterAndAFreshReader) {
  const Engine engine = MakeEngine();
  const std::vector<Window> windows = Windows({1, 60, 3600, 86400});
  std::mt19937_64 rng(7);
  SlidingLog log;
  const int64_t end = kStart + 7200;
  const auto expect_counts = [&](const Engine& from, int64_t at, const char* who) {
    Result<Counts> counts = from.Count("url_shorten", "10.0.0.1", windows, FromUnix(at));
    ASSERT_TRUE(counts.ok()) << counts.error().ToString();
    for (size_t i = 0; i < windows.size(); ++i) {
      ASSERT_EQ(counts->windows[i].count, log.Window(at, windows[i].length().count()))
          << who << ", at " << at << " window " << windows[i].ToString();
    }
  };
  // Every second even in short-trace runs (sanitizers): fewer hits would not fill a base.
  for (int64_t t = kStart; t < end; ++t) {
    if (rng() % 5 == 0) continue;  // a quiet second
    clock_->Set(FromUnix(t));
    const uint64_t cost = 1 + rng() % 3;
    ASSERT_TRUE(engine.Record("url_shorten", "10.0.0.1", cost).ok()) << "at " << t;
    log.Add(t, cost);
    if (rng() % 16 == 0) {
      ASSERT_NO_FATAL_FAILURE(expect_counts(engine, t, "the writer"));
    }
  }
  clock_->Set(FromUnix(end));
  std::unique_ptr<MemcachedStore> fresh;
  Store* reader_store = &harness_->store();
  if (auto* memcached = dynamic_cast<testing::MemcachedHarness*>(harness_.get())) {
    EXPECT_EQ(memcached->memcached().Flush(), 0u);
    if (harness_->name() == "memcached_packed") {
      const std::optional<std::string> keys = memcached->server().MetaDump();
      ASSERT_TRUE(keys.has_value());
      // A base is named `<pack>:b<12 hex digits>` (the dump may escape the colon).
      EXPECT_TRUE(std::regex_search(*keys, std::regex("(:|%3A)b[0-9a-f]{12}( |$)")))
          << "no base was written";
    }
    MemcachedOptions options = testing::PatientMemcachedOptions();
    options.servers = {memcached->server().address()};
    options.layout = harness_->name() == "memcached_packed" ? MemcachedLayout::kPacked
                                                            : MemcachedLayout::kCounters;
    fresh = std::move(*MemcachedStore::Create(options));
    reader_store = fresh.get();
  }
  const Engine reader = *Engine::Create(*reader_store, *clock_, Options());
  for (int q = 0; q < TraceSteps(300); ++q) {
    const int64_t at = kStart + static_cast<int64_t>(rng() % 7300);
    ASSERT_NO_FATAL_FAILURE(expect_counts(reader, std::min(at, end), "a fresh reader"));
  }
}

// Whether a hit of `cost` at `t` fits every limit of `policy`, by the brute-force log.
bool FitsAt(const SlidingLog& log, const Policy& policy, int64_t t, uint64_t cost) {
  for (const Limit& limit : policy.limits) {
    if (log.Window(t, limit.window.length().count()) + cost > limit.max_hits) return false;
  }
  return true;
}

// A bursty client: 40% of hits in the same second, 40% within half a minute, the rest within
// half an hour.
int64_t NextGap(std::mt19937_64& rng) {
  const uint64_t r = rng() % 100;
  return r < 40   ? 0
         : r < 80 ? static_cast<int64_t>(rng() % 30)
                  : static_cast<int64_t>(rng() % 1800);
}

void EngineTest::DecideAsAPerfectLimiter(const Engine& engine, const Policy& policy,
                                         const std::string& feature, int64_t from, int64_t to,
                                         uint64_t seed, SlidingLog& admitted, int& denied,
                                         int64_t stretch) {
  std::mt19937_64 rng(seed);
  for (int64_t t = from; t < to;) {
    t += NextGap(rng) * stretch;
    clock_->Set(FromUnix(t));
    bool fits = true;
    for (const Limit& limit : policy.limits) {
      const Span span = limit.window.SpanAt(FromUnix(t));
      fits = fits && admitted.CountIn(span.first, span.last) + 1 <= limit.max_hits;
    }
    Result<Decision> d = engine.Check("api", feature, policy);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    ASSERT_FALSE(d->degraded) << "at " << t << ": " << d->store_error->ToString();
    ASSERT_EQ(d->allowed, fits) << "at " << t;
    if (fits) admitted.Add(t);
    denied += fits ? 0 : 1;
    for (const LimitOutcome& o : d->limits) {
      if (!o.exact) continue;
      const Span span = o.limit.window.SpanAt(FromUnix(t));
      ASSERT_EQ(o.count, admitted.CountIn(span.first, span.last))
          << o.limit.ToString() << " at " << t;
    }
  }
}

// Every count the decision read is the truth, or (settled by bounds) brackets it.
void ExpectCountsMatch(const Decision& d, const SlidingLog& counted, int64_t t) {
  for (const LimitOutcome& o : d.limits) {
    const uint64_t truth = counted.Window(t, o.limit.window.length().count());
    if (o.exact) {
      ASSERT_EQ(o.count, truth);
    } else {  // settled by bounds: the truth lies between them
      ASSERT_LE(o.count_min, truth);
      ASSERT_GE(o.count, truth);
    }
    ASSERT_EQ(o.remaining, o.count < o.limit.max_hits ? o.limit.max_hits - o.count : 0);
  }
}

// retry_after is never too early: after it, with nothing else happening, the hit fits; read from
// the store, it is exact: one second earlier it would not fit yet.
void ExpectRetryAfterExact(const Decision& d, const SlidingLog& counted, const Policy& policy,
                           int64_t t, uint64_t cost) {
  ASSERT_TRUE(d.retry_after.has_value());
  const int64_t later = t + d.retry_after->count();
  if (d.cost.blocked_hits == 0 && d.retry_after > Seconds{0}) {
    EXPECT_FALSE(FitsAt(counted, policy, later - 1, cost))
        << "retry_after " << d.retry_after->count() << " is late at " << t;
  }
  for (const Limit& limit : policy.limits) {
    EXPECT_LE(counted.Window(later, limit.window.length().count()) + cost, limit.max_hits)
        << "retry_after " << d.retry_after->count() << " too early for " << limit.ToString()
        << " blocked " << d.cost.blocked_hits << " exact " << d.limits[0].exact << " rt "
        << d.cost.round_trips << " at " << t;
  }
}

// Admitted mode must decide exactly as a perfect sliding-window limiter over admitted hits;
// attempts mode as one over all attempts.
TEST_P(EngineTest, DecisionsEqualAPerfectSlidingWindowLimiter) {
  const Engine engine = MakeEngine();
  for (CountingMode mode : {CountingMode::kAdmitted, CountingMode::kAttempts}) {
    const Policy policy = MakePolicy("2/s, 5/m, 10/h, 100/d", mode);
    const std::string feature = std::string("client-") + std::string(CountingModeName(mode));
    std::mt19937_64 rng(mode == CountingMode::kAdmitted ? 1 : 2);
    SlidingLog counted;
    int64_t t = kStart;
    int denied = 0, admitted = 0, local = 0;
    for (int i = 0; i < TraceSteps(3000); ++i) {
      t += NextGap(rng);
      clock_->Set(FromUnix(t));
      const uint64_t cost = rng() % 10 == 0 ? 2 : 1;
      const bool expect = FitsAt(counted, policy, t, cost);
      Result<Decision> d = engine.Check("url_shorten", feature, policy, cost);
      ASSERT_TRUE(d.ok()) << d.error().ToString();
      ASSERT_FALSE(d->degraded);
      ASSERT_EQ(d->allowed, expect) << "check " << i << " at " << t;
      // One round trip; a second when the bounds do not settle it; a denial adds at most one per
      // ladder level to pin its retry time to the second.
      ASSERT_LE(d->cost.round_trips, (hot() ? 2u : 1u) + (d->allowed ? 0u : 3u));
      if (expect || mode == CountingMode::kAttempts) counted.Add(t, cost);
      if (d->cost.blocked_hits > 0) {
        ASSERT_FALSE(d->allowed);
        ASSERT_EQ(d->cost.keys_read, 0u);
        ++local;
      } else {
        ASSERT_NO_FATAL_FAILURE(ExpectCountsMatch(*d, counted, t));
      }
      EXPECT_EQ(d->recorded, expect || mode == CountingMode::kAttempts);
      if (!d->allowed) {
        ASSERT_NO_FATAL_FAILURE(ExpectRetryAfterExact(*d, counted, policy, t, cost));
      }
      (d->allowed ? admitted : denied)++;
    }
    EXPECT_GT(denied, 100 / TraceDivisor()) << CountingModeName(mode);
    if (hot()) {
      EXPECT_GT(local, 10 / TraceDivisor()) << "the blocked-client cache answered some denials";
    }
    // Attempts mode keeps a persistent client locked out, so few get through.
    EXPECT_GT(admitted, (mode == CountingMode::kAdmitted ? 100 : 10) / TraceDivisor())
        << CountingModeName(mode);
  }
}

// A peek decides as the perfect limiter would for the hit, reads exact counts without it, and
// records nothing: the checks between the peeks still agree with a log that never saw them.
TEST_P(EngineTest, PeekDecidesAsAPerfectLimiterAndRecordsNothing) {
  const Engine engine = MakeEngine();
  for (CountingMode mode : {CountingMode::kAdmitted, CountingMode::kAttempts}) {
    const Policy policy = MakePolicy("2/s, 5/m, 10/h, 100/d", mode);
    const std::string feature = std::string("peeked-") + std::string(CountingModeName(mode));
    std::mt19937_64 rng(mode == CountingMode::kAdmitted ? 3 : 4);
    SlidingLog counted;
    int64_t t = kStart;
    int denied_peeks = 0;
    for (int i = 0; i < TraceSteps(1500); ++i) {
      t += NextGap(rng);
      clock_->Set(FromUnix(t));
      const uint64_t peek_cost = 1 + rng() % 3;
      Result<Decision> peek = engine.Peek("url_shorten", feature, policy, peek_cost);
      ASSERT_TRUE(peek.ok()) << peek.error().ToString();
      ASSERT_EQ(peek->allowed, FitsAt(counted, policy, t, peek_cost))
          << "peek " << i << " at " << t;
      ASSERT_FALSE(peek->recorded);
      ASSERT_EQ(peek->cost.keys_written, 0u);
      ASSERT_LE(peek->cost.round_trips, peek->allowed ? 1u : 4u);  // a denial pins its retry
      ASSERT_NO_FATAL_FAILURE(ExpectCountsMatch(*peek, counted, t));
      for (const LimitOutcome& o : peek->limits) ASSERT_TRUE(o.exact);
      if (!peek->allowed && peek_cost > 2) {
        ASSERT_FALSE(peek->retry_after.has_value()) << "3 hits never fit under 2/s";
      } else if (!peek->allowed) {
        ++denied_peeks;
        ASSERT_NO_FATAL_FAILURE(ExpectRetryAfterExact(*peek, counted, policy, t, peek_cost));
      }
      const uint64_t cost = 1;
      const bool expect = FitsAt(counted, policy, t, cost);
      Result<Decision> d = engine.Check("url_shorten", feature, policy, cost);
      ASSERT_TRUE(d.ok());
      ASSERT_EQ(d->allowed, expect) << "check " << i << " at " << t;
      if (expect || mode == CountingMode::kAttempts) counted.Add(t, cost);
    }
    EXPECT_GT(denied_peeks, 100 / TraceDivisor()) << CountingModeName(mode);
  }
}

TEST_P(EngineTest, AttemptsModeKeepsABruteForcerLockedOut) {
  const Engine engine = MakeEngine();
  const Policy attempts = MakePolicy("3/m", CountingMode::kAttempts);
  const Policy admitted = MakePolicy("3/m", CountingMode::kAdmitted);
  // One attempt every 10 s: admitted mode lets 3 a minute through forever; attempts mode keeps
  // the window full and denies everything after the first 3.
  int through_attempts = 0, through_admitted = 0;
  for (int i = 0; i < 60; ++i) {
    clock_->Set(FromUnix(kStart + 10 * i));
    through_attempts += engine.Check("login", "mallory", attempts)->allowed;
    through_admitted += engine.Check("login", "eve", admitted)->allowed;
  }
  EXPECT_EQ(through_attempts, 3);
  EXPECT_EQ(through_admitted, 60 / 2);  // 3 per 6 attempts
}

TEST_P(EngineTest, DenialReportsRetryAfterAndTakesTheHitBack) {
  const Engine engine = MakeEngine();
  const Policy policy = MakePolicy("3/m, 10/h");
  Result<Decision> d = FillThenCheck(engine, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(d->recorded);
  ASSERT_EQ(d->limits.size(), 2u);
  EXPECT_TRUE(d->limits[0].exceeded);
  EXPECT_EQ(d->limits[0].count, 3u);
  EXPECT_EQ(d->limits[0].remaining, 0u);
  // The hit at kStart leaves the window at kStart + 60: 30 s from now, to the second.
  EXPECT_EQ(d->limits[0].retry_after, Seconds{30});
  EXPECT_FALSE(d->limits[1].exceeded);
  EXPECT_EQ(d->limits[1].remaining, 7u);
  EXPECT_EQ(d->retry_after, d->limits[0].retry_after);
  if (harness_->store().conditional_batches()) {
    EXPECT_EQ(d->cost.keys_written, 0u) << "held back on the store: nothing written or taken back";
  } else {
    EXPECT_EQ(d->cost.keys_written, 9u) << "five increments (with the ledger), four take-backs";
  }
  EXPECT_LE(d->cost.round_trips, 4u) << "the take-back is not waited for";
  // The count stays at 3: the denied hit left no trace.
  EXPECT_EQ(engine.Count("signup", "ann", Windows({60}))->windows[0].count, 3u);
  clock_->Set(FromUnix(kStart + 30) + *d->retry_after);
  EXPECT_TRUE(engine.Check("signup", "ann", policy)->allowed);
  // A hit that can never fit says so.
  Result<Decision> never = engine.Check("signup", "bob", policy, 4);
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->allowed);
  EXPECT_EQ(never->retry_after, std::nullopt);
}

TEST_P(EngineTest, WithoutExactRetryADenialIsOneRoundTripAndNeverEarly) {
  EngineOptions options = Options();
  options.exact_retry_after = false;
  options.hot_path.bounds = false;
  const Engine engine = MakeEngine(options);
  const Policy policy = MakePolicy("3/m, 10/h");
  Result<Decision> d = FillThenCheck(engine, policy);
  ASSERT_FALSE(d->allowed);
  EXPECT_EQ(d->cost.round_trips, 1u);
  // The three hits sit in the open minute bucket: the coarse answer waits for all of it to
  // leave (never early, here 60 s instead of the exact 30 s).
  ASSERT_TRUE(d->retry_after.has_value());
  EXPECT_GE(*d->retry_after, Seconds{30});
  EXPECT_LT(*d->retry_after, Seconds{30 + 60});
}

// A policy whose windows are all shorter than an hour keeps no day ledger: its hits and their
// take-backs write only their buckets. An hour's window or longer keeps it.
TEST_P(EngineTest, WindowsShorterThanAnHourKeepNoDayLedger) {
  const Engine engine = MakeEngine();
  clock_->Set(FromUnix(kStart + 12345));
  const auto ledger = [&](const std::string& feature) {
    const std::string group = engine.keys().GroupKey("shorten", feature);
    const KeySpace::LedgerKeys keys = KeySpace::Ledger(group, (kStart + 12345) / 86400);
    return harness_->store().Apply(Batch{group, {}, {keys.added, keys.events}});
  };
  Result<Decision> d = engine.Check("shorten", "short", MakePolicy("2/s, 5/m"));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->cost.keys_written, 3u) << "three buckets, no ledger";
  EXPECT_EQ(*ledger("short"), (std::vector<uint64_t>{0, 0}));
  ASSERT_TRUE(engine.Check("shorten", "short", MakePolicy("2/s, 5/m"))->allowed);
  d = engine.Check("shorten", "short", MakePolicy("2/s, 5/m"));  // the third in a second
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  if (!harness_->store().conditional_batches()) {
    EXPECT_EQ(d->cost.keys_written, 6u) << "the hit and its take-back, no ledger";
  }
  EXPECT_EQ(*ledger("short"), (std::vector<uint64_t>{0, 0})) << "nor for the take-back";
  EXPECT_EQ(engine.Count("shorten", "short", Windows({1}))->windows[0].count, 2u);

  d = engine.Check("shorten", "hourly", MakePolicy("5/m, 10/h"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cost.keys_written, 5u) << "three buckets and the day ledger's two counters";
  EXPECT_EQ(*ledger("hourly"), (std::vector<uint64_t>{1, 1}));
}

TEST_P(EngineTest, FourLimitsAreOneRoundTripWithFiveWrites) {
  const Engine engine = MakeEngine();
  clock_->Set(FromUnix(kStart + 12345));
  Result<Decision> d = engine.Check("url_shorten", "1.2.3.4", MakePolicy("2/s, 5/m, 10/h, 100/d"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cost.round_trips, 1u);
  EXPECT_EQ(d->cost.keys_written, 5u) << "three buckets and the day ledger's two counters";
  EXPECT_GE(d->cost.keys_read, 1u);
  EXPECT_LE(d->cost.keys_read, 144u);
}

// A caller undoing an admitted check (one of several that must all pass) takes back exactly its
// hits, at the instant it was decided, even after the clock moved on.
TEST_P(EngineTest, UnrecordTakesBackAnAdmittedCheckAtItsInstant) {
  const Engine engine = MakeEngine();
  const Policy policy = MakePolicy("3/m, 10/h");
  clock_->Set(FromUnix(kStart + 59));
  ASSERT_TRUE(engine.Record("signup", "ann", 2).ok());
  Result<Decision> d = engine.Check("signup", "ann", policy, 1);
  ASSERT_TRUE(d.ok() && d->allowed);
  EXPECT_EQ(d->at, FromUnix(kStart + 59));
  clock_->Set(FromUnix(kStart + 61));  // the next minute
  ASSERT_TRUE(engine.Unrecord("signup", "ann", 1, d->at).ok());
  const std::vector<Window> windows = Windows({60, 3600});
  Result<Counts> counts = engine.Count("signup", "ann", windows, FromUnix(kStart + 59));
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->windows[0].count, 2u);
  EXPECT_EQ(counts->windows[1].count, 2u);
  EXPECT_FALSE(engine.Unrecord("", "ann", 1, d->at).ok());
  EXPECT_FALSE(engine.Unrecord("signup", "ann", 0, d->at).ok());
}

// A settlement records the difference between a decision's charge and its true cost at the
// decision's instant, up or down, and returns once the store applied it: another engine counts
// it at once (no Flush). Instants other services' decisions cannot have are refused.
TEST_P(EngineTest, SettleRecordsTheDifferenceAtTheDecisionsInstant) {
  const Engine a = MakeEngine();
  const Engine b = MakeEngine();
  const Policy policy = MakePolicy("1000/m, 5000/h");
  clock_->Set(FromUnix(kStart + 59));
  Result<Decision> d = a.Check("llm", "t1", policy, 300);
  ASSERT_TRUE(d.ok() && d->allowed);
  clock_->Set(FromUnix(kStart + 61));  // the response took two seconds
  const std::vector<Window> windows = Windows({60, 3600});
  const auto count_at_decision = [&] {
    Result<Counts> c = b.Count("llm", "t1", windows, d->at);
    EXPECT_TRUE(c.ok()) << c.error().ToString();
    return c.ok() ? c->windows[0].count : 0;
  };
  Result<Engine::Settlement> up = a.Settle("llm", "t1", d->at, 300, 420);
  ASSERT_TRUE(up.ok()) << up.error().ToString();
  EXPECT_EQ(up->delta, 120);
  EXPECT_GT(up->cost.keys_written, 0u);
  EXPECT_EQ(count_at_decision(), 420u);
  Result<Engine::Settlement> down = a.Settle("llm", "t1", d->at, 420, 20);
  ASSERT_TRUE(down.ok()) << down.error().ToString();
  EXPECT_EQ(down->delta, -400);
  EXPECT_EQ(count_at_decision(), 20u);
  Result<Engine::Settlement> same = a.Settle("llm", "t1", d->at, 20, 20);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->delta, 0);
  EXPECT_EQ(same->cost.keys_written, 0u);
  EXPECT_EQ(count_at_decision(), 20u);
  const Instant now = clock_->Now();
  for (const Instant bad : {now + Seconds{6}, now - Seconds{86400}}) {  // margin 5 s, retention 1 d
    Result<Engine::Settlement> refused = a.Settle("llm", "t1", bad, 1, 900);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(refused.error().message().find("is not the instant of a decision"), std::string::npos)
        << refused.error().message();
  }
  EXPECT_TRUE(a.Settle("llm", "t1", now + Seconds{5}, 1, 2).ok()) << "a host 5 s ahead";
  EXPECT_FALSE(a.Settle("", "t1", d->at, 1, 2).ok());
  EXPECT_EQ(count_at_decision(), 20u) << "refused settlements changed nothing";
}

// A settlement with an id applies once, whichever process sends it again: the second is answered
// replayed and writes nothing.
TEST_P(EngineTest, ASettlementWithAnIdAppliesOnceFromAnyProcess) {
  const Engine a = MakeEngine();
  const Engine b = MakeEngine();
  const Policy policy = MakePolicy("1000/m");
  clock_->Set(FromUnix(kStart + 10));
  Result<Decision> d = a.Check("llm", "t2", policy, 300);
  ASSERT_TRUE(d.ok() && d->allowed);
  const auto count = [&] { return b.Count("llm", "t2", Windows({60}), d->at)->windows[0].count; };
  const Engine::Once once{"0123456789abcdef0123456789abcdef", Seconds{600}};
  Result<Engine::Settlement> first = a.Settle("llm", "t2", d->at, 300, 100, once);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_FALSE(first->replayed);
  EXPECT_EQ(first->delta, -200);
  EXPECT_EQ(count(), 100u);
  for (const Engine* e : {&a, &b}) {
    Result<Engine::Settlement> again = e->Settle("llm", "t2", d->at, 300, 100, once);
    ASSERT_TRUE(again.ok()) << again.error().ToString();
    EXPECT_TRUE(again->replayed);
    EXPECT_EQ(again->delta, 0);
  }
  EXPECT_EQ(count(), 100u) << "a replay changed the count";
  Result<Engine::Settlement> other =
      b.Settle("llm", "t2", d->at, 0, 50, Engine::Once{"another-decision", Seconds{600}});
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->replayed);
  EXPECT_EQ(count(), 150u);
  EXPECT_FALSE(a.Settle("llm", "t2", d->at, 1, 2, Engine::Once{"", Seconds{600}}).ok());
  EXPECT_FALSE(
      a.Settle("llm", "t2", d->at, 1, 2, Engine::Once{std::string(65, 'x'), Seconds{600}}).ok());
}

TEST_P(EngineTest, FixedAndCalendarWindows) {
  const Engine engine = MakeEngine();
  const Policy policy{{Limit{*Window::Fixed(Seconds{60}), 2},
                       Limit{*Window::Calendar(CalendarUnit::kDay, Seconds{2 * 3600}), 3}},
                      CountingMode::kAdmitted,
                      FailureMode::kFailOpen};
  // 21:59:58 UTC is 23:59:58 at +02:00.
  const int64_t t0 = kStart + 22 * 3600 - 2;
  clock_->Set(FromUnix(t0));
  EXPECT_TRUE(engine.Check("api", "key1", policy)->allowed);
  EXPECT_TRUE(engine.Check("api", "key1", policy)->allowed);
  Result<Decision> d = engine.Check("api", "key1", policy);
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->retry_after, Seconds{2});  // the fixed minute turns over at 22:00:00
  clock_->Set(FromUnix(t0 + 2));          // a new fixed minute and a new local day
  EXPECT_TRUE(engine.Check("api", "key1", policy)->allowed);
  EXPECT_EQ(engine.Check("api", "key1", policy)->limits[1].count, 2u);
}

// Calendar hours and days on the wall clock of zones that set their clocks back (by an hour in
// Berlin, by half an hour at Lord Howe Island) and forward, decided as a perfect limiter counting
// each window's span (checked against glibc's clock in time_zone_test.cc) over admitted hits.
TEST_P(EngineTest, CalendarWindowsInAZoneDecideAsItsWallClockSays) {
  EngineOptions options = Options();
  options.retention = Seconds{2 * 86400};  // a local day lasts up to 25 hours
  const Engine engine = MakeEngine(options);
  struct Case {
    const char* zone;
    int64_t change;  // a change of offset the trace crosses
  };
  for (const Case& c : {Case{"Europe/Berlin", 1'792'890'000},           // 2026-10-25, back
                        Case{"Europe/Berlin", 1'774'746'000},           // 2026-03-29, forward
                        Case{"Australia/Lord_Howe", 1'775'314'800}}) {  // 2026-04-05, back
    const TimeZone zone = *TimeZone::Named(c.zone);
    const Policy policy{{Limit{Window::Calendar(CalendarUnit::kHour, zone), 7},
                         Limit{Window::Calendar(CalendarUnit::kDay, zone), 40}},
                        CountingMode::kAdmitted,
                        FailureMode::kFailOpen};
    SlidingLog admitted;
    int denied = 0;
    ASSERT_NO_FATAL_FAILURE(DecideAsAPerfectLimiter(
        engine, policy, "client-" + std::to_string(c.change), c.change - 30 * 3600,
        c.change + 30 * 3600, static_cast<uint64_t>(c.change), admitted, denied))
        << c.zone;
    EXPECT_GT(denied, 20) << c.zone;
  }
}

// A monthly quota in Berlin across the month's end (November starts at 23:00 UTC on October 31),
// on a ladder with days (UTC-aligned day buckets, a month that starts at 22:00 or 23:00 UTC),
// decided as a perfect limiter counting each window's span over admitted hits.
TEST_P(EngineTest, AMonthInAZoneOnALadderWithDaysDecidesAsItsWallClockSays) {
  EngineOptions options = Options();
  options.ladder = *Ladder::Parse("1s,1m,1h,1d");
  options.retention = Seconds{33 * 86400};
  const Engine engine = MakeEngine(options);
  const TimeZone berlin = *TimeZone::Named("Europe/Berlin");
  const Policy policy{{Limit{Window::Calendar(CalendarUnit::kMonth, berlin), 60},
                       Limit{Window::Calendar(CalendarUnit::kDay, berlin), 25},
                       Limit{*Window::Sliding(Seconds{3600}), 12}},
                      CountingMode::kAdmitted,
                      FailureMode::kFailOpen};
  const int64_t november = 1'793'487'600;  // 2026-11-01 00:00 CET
  SlidingLog admitted;
  int denied = 0;
  ASSERT_NO_FATAL_FAILURE(DecideAsAPerfectLimiter(engine, policy, "tenant", november - 3 * 86400,
                                                  november + 2 * 86400, 31, admitted, denied));
  EXPECT_GT(denied, 100);
  EXPECT_GT(admitted.CountIn(november, november + 2 * 86400), 0u) << "November starts afresh";
}

// A month's sliding windows on the ladder that reads them in a few dozen keys (--ladder
// 1s,1m,1h,1d), on a bursty random trace of 34 days: every decision a perfect limiter's, every
// count read the truth, each of the four limits binding in turn.
TEST_P(EngineTest, SlidingWindowsUpToAMonthOnALadderWithDaysDecideAsAPerfectLimiter) {
  EngineOptions options = Options();
  options.ladder = *Ladder::Parse("1s,1m,1h,1d");
  options.retention = Seconds{31 * 86400};
  const Engine engine = MakeEngine(options);
  const Policy policy{*ParseLimits("12/h, 60/d, 200/7d, 600/31d"), CountingMode::kAdmitted,
                      FailureMode::kFailOpen};
  SlidingLog admitted;
  int denied = 0;
  ASSERT_NO_FATAL_FAILURE(DecideAsAPerfectLimiter(engine, policy, "tenant", kStart,
                                                  kStart + 34 * 86400, 34, admitted, denied,
                                                  /*stretch=*/TraceDivisor()));
  EXPECT_GT(denied, 1000);
  // The month binds at the end: its window holds all it may.
  const int64_t end = ToUnix(clock_->Now());
  EXPECT_EQ(admitted.Window(end, 31 * 86400), 600u);
}

TEST_P(EngineTest, HostileFeaturesAreCountedAsThemselves) {
  const Engine engine = MakeEngine();
  const std::vector<std::string> features = {"x\r\nflush_all\r\n",
                                             "a b",
                                             std::string(10 * 1024, 'z'),
                                             std::string(10 * 1024, 'y'),
                                             std::string("\0\0", 2),
                                             "caf\xc3\xa9",
                                             "%",
                                             "#",
                                             "",
                                             "plain"};
  for (size_t i = 0; i < features.size(); ++i) {
    for (size_t n = 0; n <= i; ++n) {
      Result<Cost> c = engine.Record("signup", features[i]);
      ASSERT_TRUE(c.ok()) << i << ": " << c.error().ToString();
    }
  }
  for (size_t i = 0; i < features.size(); ++i) {
    Result<Counts> counts = engine.Count("signup", features[i], Windows({86400}));
    ASSERT_TRUE(counts.ok());
    EXPECT_EQ(counts->windows[0].count, i + 1) << "feature " << i;
  }
  // The store still holds everything: no flush_all went through.
  EXPECT_EQ(engine.Count("signup", "plain", Windows({60}))->windows[0].count, features.size());
}

TEST_P(EngineTest, ResetZeroesEveryWindowOfOneFeatureOnly) {
  const Engine engine = MakeEngine();
  for (int i = 0; i < 50; ++i) {
    clock_->Set(FromUnix(kStart + 997 * i));
    ASSERT_TRUE(engine.Record("signup", "ann").ok());
    ASSERT_TRUE(engine.Record("signup", "bob").ok());
  }
  const int64_t now = ToUnix(clock_->Now());
  Result<Engine::ResetOutcome> reset = engine.Reset("signup", "ann");
  ASSERT_TRUE(reset.ok()) << reset.error().ToString();
  // Each hit its own second and minute, 14 hours; the generation bump is a write, not a delete;
  // the day ledgers that can be alive are deleted too.
  EXPECT_EQ(reset->deleted, 50u * 2 + 14);
  const int64_t ledger_days = FloorDiv(now + 5, 86400) - FloorDiv(now - 86400 - 5, 86400) + 1;
  EXPECT_EQ(reset->cost.keys_written, 50u * 2 + 14 + 2 * ledger_days + 1);
  const std::vector<Window> windows = Windows({1, 60, 3600, 86400});
  for (int64_t at = now - 86400; at <= now; at += 37) {
    Result<Counts> ann = engine.Count("signup", "ann", windows, FromUnix(at));
    ASSERT_TRUE(ann.ok()) << ann.error().ToString();
    for (const WindowCount& w : ann->windows) ASSERT_EQ(w.count, 0u) << at;
  }
  EXPECT_EQ(engine.Count("signup", "bob", Windows({86400}))->windows[0].count, 50u);
}

TEST_P(EngineTest, ResetAroundAPastInstantClearsReplayedHits) {
  const Engine engine = MakeEngine();
  clock_->Set(FromUnix(kStart + 30 * 86400));
  ASSERT_TRUE(engine.Record("replay", "ip", 5, FromUnix(kStart)).ok());
  EXPECT_EQ(engine.Count("replay", "ip", Windows({60}), FromUnix(kStart))->windows[0].count, 5u);
  ASSERT_TRUE(engine.Reset("replay", "ip", FromUnix(kStart)).ok());
  EXPECT_EQ(engine.Count("replay", "ip", Windows({60}), FromUnix(kStart))->windows[0].count, 0u);
}

// Checks at an instant the caches treat as settled write into its buckets: they must see their
// own hits, not values a Count cached before, or a limit is exceeded.
TEST_P(EngineTest, ChecksAtASettledInstantSeeTheirOwnHits) {
  const Engine engine = MakeEngine();
  const Instant past = clock_->Now() - Seconds{3600};
  ASSERT_TRUE(engine.Record("e", "f", 2, past).ok());
  ASSERT_EQ(engine.Count("e", "f", Windows({60}), past)->windows[0].count, 2u);
  const Policy policy = MakePolicy("3/m");
  Result<Decision> third = engine.Check("e", "f", policy, 1, past);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->allowed);
  EXPECT_EQ(third->limits[0].count, 3u);
  Result<Decision> fourth = engine.Check("e", "f", policy, 1, past);
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(fourth->allowed) << "a fourth hit in a minute limited to 3";
  EXPECT_EQ(engine.Count("e", "f", Windows({60}), past)->windows[0].count, 3u);
}

// The accepted instants are 1970-01-01 to 9999-12-31: both ends count exactly; beyond them every
// operation is an InvalidArgument error naming the range, before anything is written.
TEST_P(EngineTest, InstantsAtTheEdgesOfTheRangeAndBeyond) {
  const Engine engine = MakeEngine();
  const Policy policy = MakePolicy("5/m");
  for (const Instant edge : {kFirstInstant, kLastInstant}) {
    const std::string feature = "edge-" + std::to_string(ToUnix(edge));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine.Record("e", feature, 1, edge).ok());
    Result<Counts> counts = engine.Count("e", feature, Windows({1, 60, 86400}), edge);
    ASSERT_TRUE(counts.ok()) << counts.error().ToString();
    for (const WindowCount& w : counts->windows) EXPECT_EQ(w.count, 3u) << ToUnix(edge);
    Result<Decision> d = engine.Check("e", feature, policy, 1, edge);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    EXPECT_TRUE(d->allowed);
    EXPECT_EQ(d->limits[0].count, 4u);
  }
  for (const Instant beyond :
       {FromUnix(-1), kLastInstant + Seconds{1}, FromUnix(std::numeric_limits<int64_t>::max())}) {
    Result<Decision> d = engine.Check("e", "beyond", policy, 1, beyond);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(d.error().message().find("253402300799"), std::string::npos);
    EXPECT_FALSE(engine.Record("e", "beyond", 1, beyond).ok());
    EXPECT_FALSE(engine.Count("e", "beyond", Windows({60}), beyond).ok());
    EXPECT_FALSE(engine.Reset("e", "beyond", beyond).ok());
  }
  EXPECT_EQ(engine.Count("e", "beyond", Windows({86400}))->windows[0].count, 0u);
}

TEST_P(EngineTest, BadArgumentsAreInvalidArgumentErrors) {
  const Engine engine = MakeEngine();
  EXPECT_EQ(engine.Record("", "f").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(engine.Record("e", "f", 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(engine.Check("e", "f", MakePolicy("1/m"), 0).error().code(),
            ErrorCode::kInvalidArgument);
  // Events and features are at most kMaxFieldBytes; the error says so without echoing them.
  EXPECT_TRUE(engine.Record("e", std::string(kMaxFieldBytes, 'f')).ok());
  Result<Cost> long_feature = engine.Record("e", std::string(kMaxFieldBytes + 1, 'f'));
  ASSERT_FALSE(long_feature.ok());
  EXPECT_EQ(long_feature.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(long_feature.error().message(), "feature of 65537 bytes: at most 65536 bytes");
  EXPECT_FALSE(engine.Check(std::string(kMaxFieldBytes + 1, 'e'), "f", MakePolicy("1/m")).ok());
  // A call counts for at most kMaxHitsPerCall hits, and the error says so.
  Result<Decision> huge = engine.Check("e", "f", MakePolicy("1/m"), kMaxHitsPerCall + 1);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(huge.error().message().find("1 to 1000000000"), std::string::npos);
  EXPECT_EQ(engine.Record("e", "f", uint64_t{1} << 62).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(engine.Record("e", "f", kMaxHitsPerCall).ok());
  Result<Counts> too_long = engine.Count("e", "f", Windows({2 * 86400}));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(too_long.error().message().find("retention"), std::string::npos);
  EXPECT_FALSE(engine.Check("e", "f", MakePolicy("1/2d")).ok());
  EngineOptions bad;
  bad.name_space = "bad namespace";
  EXPECT_EQ(Engine::Create(harness_->store(), *clock_, bad).error().code(),
            ErrorCode::kInvalidArgument);
}

TEST_P(EngineTest, StoreFailureFailsOpenOrClosedAsThePolicySays) {
  testing::FailingStore failing(harness_->store());
  const Engine engine = *Engine::Create(failing, *clock_, Options());
  Policy open = MakePolicy("1/m");
  Policy closed = open;
  closed.on_store_failure = FailureMode::kFailClosed;
  failing.Fail(true);
  Result<Decision> d = engine.Check("e", "f", open);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->degraded);
  ASSERT_TRUE(d->store_error.has_value());
  EXPECT_EQ(d->store_error->code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(d->limits.empty()) << "no count was read, none is pretended";
  d = engine.Check("e", "f", closed);
  EXPECT_FALSE(d->allowed);
  EXPECT_TRUE(d->degraded);
  EXPECT_EQ(engine.Count("e", "f", Windows({60})).error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(engine.Record("e", "f").error().code(), ErrorCode::kUnavailable);
  failing.Fail(false);
  d = engine.Check("e", "f", open);
  EXPECT_TRUE(d->allowed);
  EXPECT_FALSE(d->degraded);
}

// The keys an eviction of one hour of a feature takes: its hour, minute and second buckets.
std::vector<std::string> HourKeys(const Engine& engine, const std::string& group, int64_t hour) {
  std::vector<std::string> keys = {engine.keys().BucketKey(group, Bucket{2, hour})};
  for (int64_t m = 0; m < 60; ++m)
    keys.push_back(engine.keys().BucketKey(group, {1, hour * 60 + m}));
  for (int64_t s = 0; s < 3600; ++s) {
    keys.push_back(engine.keys().BucketKey(group, Bucket{0, hour * 3600 + s}));
  }
  return keys;
}

// The store loses an hour of today (as memcached evicts it): a live check whose windows hold all
// of today sees the day ledger count more, says so, and counts the lost hits in the day window;
// shorter windows count them only when the policy fails closed.
TEST_P(EngineTest, HitsTheStoreLostTodayMakeTheDecisionDegraded) {
  const Engine writer = MakeEngine();
  clock_->Set(FromUnix(kStart + 3 * 3600 + 1800));                                         // 03:30
  ASSERT_TRUE(writer.Record("signup", "ann", 10, FromUnix(kStart + 3600 + 600)).ok());     // 01:10
  ASSERT_TRUE(writer.Record("signup", "ann", 3, FromUnix(kStart + 3 * 3600 + 600)).ok());  // 03:10
  const std::string group = writer.keys().GroupKey("signup", "ann");
  Policy open = MakePolicy("5/m, 12/d");
  Policy closed = open;
  closed.on_store_failure = FailureMode::kFailClosed;
  // Nothing lost: exact, not degraded (the 14th of 12/d: denied; counts are without it, as it
  // was taken back).
  Result<Decision> d = MakeEngine().Check("signup", "ann", open);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->degraded);
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->limits[1].count, 13u);

  ASSERT_TRUE(harness_->store().Delete(group, HourKeys(writer, group, kStart / 3600 + 1)).ok());
  const Engine fresh = MakeEngine();  // another process: nothing cached
  d = fresh.Check("signup", "ann", open);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->degraded);
  ASSERT_TRUE(d->store_error.has_value());
  EXPECT_EQ(d->store_error->code(), ErrorCode::kDataLoss);
  EXPECT_NE(d->store_error->message().find("10 of today's hits"), std::string::npos)
      << d->store_error->message();
  ASSERT_EQ(d->limits.size(), 2u);
  EXPECT_EQ(d->limits[1].count, 13u) << "the day window counts the lost hits";
  EXPECT_TRUE(d->limits[1].exceeded);
  EXPECT_EQ(d->limits[0].count, 0u) << "fail open: the minute may not hold them";
  EXPECT_FALSE(d->allowed) << "denied by the day, as if nothing had been lost";
  // A count tells the loss as the check does: the day holds the 3 read and the 10 lost (the
  // denied hit was taken back); an hour cannot place them and counts what it read.
  Result<Counts> counts = fresh.Count("signup", "ann", Windows({86400, 3600}));
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->missing, 10u);
  EXPECT_EQ(counts->windows[0].count, 13u);
  EXPECT_EQ(counts->windows[1].count, 3u);
  EXPECT_EQ(fresh.Count("signup", "ann", Windows({86400}), clock_->Now() - Seconds{1})->missing, 0u)
      << "a count in the past reads no ledger";

  clock_->Advance(Seconds{60});
  d = MakeEngine().Check("signup", "ann", closed);
  ASSERT_TRUE(d->degraded);
  EXPECT_EQ(d->limits[0].count, 10u) << "fail closed: the minute counts them too";
  EXPECT_EQ(d->limits[0].count_min, 0u);
  EXPECT_FALSE(d->limits[0].exact);
  EXPECT_TRUE(d->limits[0].exceeded);

  // A reset clears the ledger with the buckets: decisions are whole again.
  ASSERT_TRUE(writer.Reset("signup", "ann").ok());
  EXPECT_EQ(MakeEngine().Count("signup", "ann", Windows({86400}))->missing, 0u);
  d = MakeEngine().Check("signup", "ann", open);
  EXPECT_FALSE(d->degraded);
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->limits[1].count, 1u);
}

TEST_P(EngineTest, FailedTakeBackIsReportedAsRecorded) {
  testing::FailingStore failing(harness_->store());
  const Engine engine = *Engine::Create(failing, *clock_, Options());
  const Policy policy = MakePolicy("1/m");
  ASSERT_TRUE(engine.Check("e", "f", policy)->allowed);
  failing.FailWritesOnly(true);
  Result<Decision> d = engine.Check("e", "f", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_TRUE(d->recorded) << "the increments could not be taken back";
  EXPECT_EQ(d->limits[0].count, 2u);
  EXPECT_EQ(d->cost.failed_take_backs, 1u);
  failing.FailWritesOnly(false);
  d = engine.Check("e", "f", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(d->recorded);
  EXPECT_EQ(d->cost.failed_take_backs, 0u);
}

TEST_P(EngineTest, ReadBucketsReturnsRawBucketValues) {
  const Engine engine = MakeEngine();
  clock_->Set(FromUnix(kStart + 61));
  ASSERT_TRUE(engine.Record("e", "f", 2).ok());
  clock_->Set(FromUnix(kStart + 62));
  ASSERT_TRUE(engine.Record("e", "f", 1).ok());
  const std::vector<Bucket> buckets = {{0, kStart + 61},
                                       {0, kStart + 62},
                                       {0, kStart + 63},
                                       {1, (kStart + 61) / 60},
                                       {2, kStart / 3600}};
  Result<Engine::BucketValues> read = engine.ReadBuckets("e", "f", buckets);
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read->values, (std::vector<uint64_t>{2, 1, 0, 3, 3}));
  EXPECT_EQ(read->cost, (Cost{0, 5, 1}));
  const std::vector<Bucket> bad = {{3, 0}};
  EXPECT_EQ(engine.ReadBuckets("e", "f", bad).error().code(), ErrorCode::kInvalidArgument);
}

// Two engines with their own caches on one store stand for two app servers: a reset by one must
// reach what the other cached.
TEST_P(EngineTest, ResetByAnotherProcessInvalidatesCachedBuckets) {
  const Engine a = MakeEngine();
  const Engine b = MakeEngine();
  for (int i = 0; i < 20; ++i) {
    clock_->Set(FromUnix(kStart + 100 * i));
    ASSERT_TRUE(a.Record("signup", "ann").ok());
  }
  clock_->Set(FromUnix(kStart + 3000));
  const std::vector<Window> day = Windows({86400});
  Result<Counts> first = a.Count("signup", "ann", day);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->windows[0].count, 20u);
  Result<Counts> second = a.Count("signup", "ann", day);
  EXPECT_EQ(second->windows[0].count, 20u);
  if (hot()) {
    EXPECT_GT(second->cost.cache_hits, 0u) << "settled buckets come from the cache";
    EXPECT_LT(second->cost.keys_read, first->cost.keys_read);
  }
  ASSERT_TRUE(b.Reset("signup", "ann").ok());
  Result<Counts> after = a.Count("signup", "ann", day);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->windows[0].count, 0u) << "a's cache must not survive b's reset";
  // Checks too: a limit of 20/d admits again at once.
  const Policy policy = MakePolicy("20/d");
  EXPECT_TRUE(a.Check("signup", "ann", policy)->allowed);
}

// Hot-path behaviour, on both stores in the hot configuration only.
class HotPathTest : public EngineTest {};

TEST_P(HotPathTest, BlockedClientsAreDeniedLocallyAndAttemptsStillCount) {
  const Engine engine = MakeEngine();
  const Policy attempts = MakePolicy("3/m", CountingMode::kAttempts);
  clock_->Set(FromUnix(kStart));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine.Check("login", "mallory", attempts)->allowed);
  Result<Decision> denied = engine.Check("login", "mallory", attempts);
  ASSERT_FALSE(denied->allowed);
  EXPECT_EQ(denied->cost.blocked_hits, 0u) << "the first denial reads the store";
  for (int i = 0; i < 10; ++i) {
    Result<Decision> d = engine.Check("login", "mallory", attempts);
    ASSERT_FALSE(d->allowed);
    EXPECT_EQ(d->cost.blocked_hits, 1u);
    EXPECT_EQ(d->cost.keys_read, 0u);
    EXPECT_EQ(d->cost.round_trips, 0u);
    EXPECT_EQ(d->cost.keys_written, 3u) << "the attempt is still counted (3/m keeps no ledger)";
    EXPECT_TRUE(d->recorded);
  }
  // Fire-and-forget increments arrive: the store holds every attempt.
  EngineOptions plain = Options();
  plain.hot_path.bucket_cache_features = 0;
  const Engine probe = MakeEngine(plain);
  EXPECT_EQ(probe.Count("login", "mallory", Windows({60}))->windows[0].count, 14u);
  // Admitted mode: a blocked client reads nothing and records nothing.
  const Policy admitted = MakePolicy("1/h");
  ASSERT_TRUE(engine.Check("signup", "eve", admitted)->allowed);
  ASSERT_FALSE(engine.Check("signup", "eve", admitted)->allowed);
  Result<Decision> local = engine.Check("signup", "eve", admitted);
  EXPECT_EQ(local->cost.blocked_hits, 1u);
  EXPECT_EQ(local->cost.keys_written, 0u);
  EXPECT_FALSE(local->recorded);
  EXPECT_EQ(probe.Count("signup", "eve", Windows({3600}))->windows[0].count, 1u);
  // After blocked_max_age the store is asked again.
  clock_->Advance(Options().hot_path.blocked_max_age);
  EXPECT_EQ(engine.Check("signup", "eve", admitted)->cost.blocked_hits, 0u);
}

// A store that runs `after_read` once, after the next batch that reads: what a reset from another
// thread does between a check's read of the store and its decision.
class ReadThenStore final : public Store {
 public:
  explicit ReadThenStore(Store& inner) : inner_(inner) {}
  Result<std::vector<uint64_t>> Apply(const Batch& batch) override {
    Result<std::vector<uint64_t>> r = inner_.Apply(batch);
    if (!batch.reads.empty()) RunHook();
    return r;
  }
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override {
    std::vector<Result<std::vector<uint64_t>>> r = inner_.ApplyMany(batches);
    for (const Batch& b : batches) {
      if (!b.reads.empty()) RunHook();
    }
    return r;
  }
  std::vector<Status> Send(std::span<const Batch> batches) override { return inner_.Send(batches); }
  Status Delete(const std::string& group, std::span<const std::string> keys) override {
    return inner_.Delete(group, keys);
  }
  uint64_t Flush() override { return inner_.Flush(); }
  bool conditional_batches() const override { return inner_.conditional_batches(); }
  std::string Describe() const override { return inner_.Describe(); }

  std::function<void()> after_read;

 private:
  void RunHook() {
    if (!after_read) return;
    std::function<void()> hook = std::move(after_read);
    after_read = nullptr;
    hook();
  }
  Store& inner_;
};

// A denial decided from counts read just before a reset is answered (it was true when read), but
// not cached after the reset: the next check asks the store, which holds nothing of it.
TEST_P(HotPathTest, ADenialReadBeforeAResetIsNotCachedAfterIt) {
  ReadThenStore store(harness_->store());
  const Engine engine = *Engine::Create(store, *clock_, Options());
  const Policy attempts = MakePolicy("2/m", CountingMode::kAttempts);
  clock_->Set(FromUnix(kStart));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(engine.Check("login", "ann", attempts)->allowed);
  store.after_read = [&] { ASSERT_TRUE(engine.Reset("login", "ann").ok()); };
  Result<Decision> denied = engine.Check("login", "ann", attempts);
  ASSERT_TRUE(denied.ok());
  ASSERT_FALSE(denied->allowed);
  ASSERT_FALSE(store.after_read) << "the reset ran between the read and the decision";
  store.Flush();
  Result<Decision> next = engine.Check("login", "ann", attempts);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->allowed) << "a cached denial outlived the reset";
  EXPECT_EQ(next->cost.blocked_hits, 0u);
  EXPECT_EQ(next->limits[0].count, 1u) << "only this attempt since the reset";
}

// Admitted mode: a client denied at its last check is checked read-first, so that its denials
// create no item in the store; the check that fits again costs two round trips and counts.
TEST_P(HotPathTest, ADeniedClientIsCheckedReadFirstAndItsDenialsLeaveNothing) {
  const Engine engine = MakeEngine();
  const Policy policy = MakePolicy("2/m");
  clock_->Set(FromUnix(kStart));
  ASSERT_TRUE(engine.Check("signup", "eve", policy)->allowed);
  ASSERT_TRUE(engine.Check("signup", "eve", policy)->allowed);
  ASSERT_FALSE(engine.Check("signup", "eve", policy)->allowed);  // written, then taken back
  const long long items = LiveItems();
  ASSERT_GT(items, 0);
  for (int64_t at = 7; at < 60; at += 7) {  // each past the blocked-client cache's max age
    clock_->Set(FromUnix(kStart + at));
    Result<Decision> d = engine.Check("signup", "eve", policy);
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed) << at;
    EXPECT_EQ(d->cost.blocked_hits, 0u) << "asks the store";
    EXPECT_LE(d->cost.round_trips, 2u) << "the read first, then the exact retry time's";
    EXPECT_EQ(d->cost.keys_written, 0u);
    EXPECT_FALSE(d->recorded);
    EXPECT_EQ(d->limits[0].count, 2u);
    EXPECT_TRUE(d->limits[0].exact);
    EXPECT_EQ(d->retry_after, Seconds{60 - at}) << at;
  }
  EXPECT_EQ(LiveItems(), items) << "a denied attempt at a new second created a bucket";
  clock_->Set(FromUnix(kStart + 61));
  Result<Decision> fits = engine.Check("signup", "eve", policy);
  ASSERT_TRUE(fits.ok() && fits->allowed);
  EXPECT_TRUE(fits->recorded);
  EXPECT_EQ(fits->cost.round_trips, 2u) << "the read, then the hit with the read";
  EXPECT_EQ(fits->limits[0].count, 1u);
  clock_->Set(FromUnix(kStart + 200));  // the bounds settle it: one round trip, unless read first
  Result<Decision> next = engine.Check("signup", "eve", policy);
  ASSERT_TRUE(next.ok() && next->allowed);
  EXPECT_EQ(next->cost.round_trips, 1u) << "admitted again: no read first";
  EXPECT_TRUE(engine.Check("signup", "eve", policy)->allowed);
  EXPECT_EQ(engine.Count("signup", "eve", Windows({60}))->windows[0].count, 2u);
  EXPECT_FALSE(engine.Check("signup", "eve", policy)->allowed);
}

TEST_P(HotPathTest, ABlockUnderOnePolicyDoesNotDenyUnderAnother) {
  const Engine engine = MakeEngine();
  clock_->Set(FromUnix(kStart));
  const Policy strict = MakePolicy("1/h");
  ASSERT_TRUE(engine.Check("signup", "eve", strict)->allowed);
  ASSERT_FALSE(engine.Check("signup", "eve", strict)->allowed);
  ASSERT_EQ(engine.Check("signup", "eve", strict)->cost.blocked_hits, 1u);
  // Same group; another limit, another window kind, another mode: each asks the store.
  const Policy fixed{
      {Limit{*Window::Fixed(Seconds{3600}), 1}}, CountingMode::kAdmitted, FailureMode::kFailOpen};
  for (const Policy& other : {MakePolicy("5/h"), fixed, MakePolicy("1/h", CountingMode::kAttempts),
                              MakePolicy("1/h, 9/d")}) {
    Result<Decision> d = engine.Check("signup", "eve", other);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->cost.blocked_hits, 0u) << other.limits[0].ToString();
  }
  EXPECT_TRUE(engine.Check("signup", "eve", MakePolicy("5/h"))->allowed);
}

TEST_P(HotPathTest, RecordingIntoThePastRefreshesThisProcessCache) {
  const Engine engine = MakeEngine();
  clock_->Set(FromUnix(kStart + 7200));
  ASSERT_TRUE(engine.Record("e", "f", 1, FromUnix(kStart + 60)).ok());
  const std::vector<Window> day = Windows({86400});
  EXPECT_EQ(engine.Count("e", "f", day)->windows[0].count, 1u);
  EXPECT_EQ(engine.Count("e", "f", day)->windows[0].count, 1u);  // now from the cache
  // A replay through the same engine writes into buckets it had cached as settled.
  ASSERT_TRUE(engine.Record("e", "f", 2, FromUnix(kStart + 61)).ok());
  EXPECT_EQ(engine.Count("e", "f", day)->windows[0].count, 3u);
}

// A settlement of a decision long past (Record or Unrecord at its instant) in one process changes
// buckets every other process may have cached as settled: they see it at their next read.
TEST_P(HotPathTest, RecordingIntoThePastRefreshesEveryProcessCache) {
  const Engine a = MakeEngine();
  const Engine b = MakeEngine();
  const Instant decided = FromUnix(kStart + 60);
  clock_->Set(decided);
  ASSERT_TRUE(a.Check("llm", "t1", MakePolicy("1000/2h"), 500)->allowed);
  clock_->Set(FromUnix(kStart + 4200));  // its hour has ended: settled
  const std::vector<Window> hour = Windows({7200});
  EXPECT_EQ(b.Count("llm", "t1", hour)->windows[0].count, 500u);
  Result<Counts> cached = b.Count("llm", "t1", hour);
  EXPECT_EQ(cached->windows[0].count, 500u);
  EXPECT_GT(cached->cost.cache_hits, 0u) << "b holds the settled buckets";
  Result<Cost> up = a.Record("llm", "t1", 230, decided);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(b.Count("llm", "t1", hour)->windows[0].count, 730u) << "b's cache was dropped";
  ASSERT_TRUE(b.Count("llm", "t1", hour)->cost.cache_hits > 0u) << "and filled again";
  ASSERT_TRUE(a.Unrecord("llm", "t1", 700, decided).ok());
  harness_->store().Flush();
  EXPECT_EQ(b.Count("llm", "t1", hour)->windows[0].count, 30u);
  // So do its checks: 970 more fit under 1000/h.
  EXPECT_TRUE(b.Check("llm", "t1", MakePolicy("1000/2h"), 970)->allowed);
  EXPECT_FALSE(b.Check("llm", "t1", MakePolicy("1000/2h"), 1)->allowed);
}

TEST_P(HotPathTest, FarFromTheLimitOneRoundTripReadsAFewKeys) {
  const Engine engine = MakeEngine();
  const Policy policy = MakePolicy("2/s, 5/m, 10/h, 100/d");
  uint64_t keys = 0, checks = 0;
  for (int i = 0; i < 100; ++i) {  // one check every ~15 minutes: always far from every limit
    clock_->Set(FromUnix(kStart + 900 * i + 7));
    Result<Decision> d = engine.Check("url_shorten", "1.2.3.4", policy);
    ASSERT_TRUE(d.ok() && d->allowed);
    EXPECT_EQ(d->cost.round_trips, 1u);
    if (i >= 10) {  // once the cache is warm
      keys += d->cost.keys_read;
      ++checks;
    }
  }
  EXPECT_LE(keys / checks, 8u) << "mean keys read per check with a warm cache";
}

// A policy of seconds reads its live buckets alone: nothing of it comes from or goes to the cache,
// so the generation is not read. A reset elsewhere still reaches what the cache holds.
TEST_P(HotPathTest, APolicyOfSecondsReadsItsLiveBucketAloneAndResetsStillReachTheCache) {
  const Engine a = MakeEngine();
  const Engine b = MakeEngine();
  const Policy per_second = MakePolicy("3/s");
  clock_->Set(FromUnix(kStart));
  for (int i = 0; i < 2; ++i) {
    Result<Decision> d = a.Check("api", "key-1", per_second);
    ASSERT_TRUE(d.ok() && d->allowed);
    EXPECT_EQ(d->cost.keys_read, 1u) << "the second's bucket, no generation";
    EXPECT_EQ(d->cost.round_trips, 1u);
  }
  clock_->Advance(Seconds{10});
  const std::vector<Window> minute = Windows({60});
  EXPECT_EQ(a.Count("api", "key-1", minute)->windows[0].count, 2u);
  Result<Counts> cached = a.Count("api", "key-1", minute);
  EXPECT_GT(cached->cost.cache_hits, 0u) << "the settled second is cached";
  ASSERT_TRUE(b.Reset("api", "key-1").ok());
  Result<Decision> after = a.Check("api", "key-1", per_second);
  ASSERT_TRUE(after.ok() && after->allowed);
  EXPECT_EQ(after->cost.keys_read, 1u);
  EXPECT_EQ(a.Count("api", "key-1", minute)->windows[0].count, 1u)
      << "the cached second read before b's reset is dropped";
}

INSTANTIATE_TEST_SUITE_P(StoresAndConfigs, EngineTest,
                         ::testing::Combine(::testing::Values("memory", "memory_conditional",
                                                              "memcached", "memcached_packed",
                                                              "redis", "lmdb"),
                                            ::testing::Values("plain", "hot")),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" +
                                  std::get<1>(param_info.param);
                         });

INSTANTIATE_TEST_SUITE_P(Stores, HotPathTest,
                         ::testing::Combine(::testing::Values("memory", "memory_conditional",
                                                              "memcached", "memcached_packed",
                                                              "redis", "lmdb"),
                                            ::testing::Values("hot")),
                         [](const auto& param_info) { return std::get<0>(param_info.param); });

}  // namespace
}  // namespace hourglass
