// StoreWatch against real memcached servers: a small one (-m 8) filled until it evicts gives a
// warning and the evictions metric; a quiet poll warns of nothing; a stopped server is a store
// error, not a crash; a restarted one counts from zero again, and a restart or a flush is a loss.
#include "hourglass/store_watch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hourglass/lmdb_store.h"
#include "hourglass/memcached_store.h"
#include "hourglass/redis_store.h"
#include "memcached_server.h"
#include "prometheus_sample.h"
#include "redis_server.h"

namespace hourglass {
namespace {

using testing::MemcachedServer;
using testing::Sample;

// Enough small items (a bucket's size) to overflow 8 MB.
void Overflow(const MemcachedServer& server) { ASSERT_TRUE(server.Fill(200000)); }

class StoreWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(small_.running()) << small_.error();
    ASSERT_TRUE(large_.running()) << large_.error();
    MemcachedOptions options;
    options.servers = {small_.address(), large_.address()};
    options.retry_timeout = std::chrono::seconds{0};
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(*store);
    watch_ = std::make_unique<StoreWatch>(*store_, metrics_,
                                          [this](const std::string& w) { warnings_.push_back(w); });
  }
  double Metric(const std::string& name, const MemcachedServer& server) const {
    return Sample(metrics_.Render(), name + "{server=\"" + server.address() + "\"}");
  }

  MemcachedServer small_{"127.0.0.1", 8}, large_;
  std::unique_ptr<MemcachedStore> store_;
  ServiceMetrics metrics_;
  std::vector<std::string> warnings_;
  std::unique_ptr<StoreWatch> watch_;
};

TEST_F(StoreWatchTest, EvictionsRaiseTheMetricAndAWarningNamingTheServer) {
  watch_->Poll();
  EXPECT_TRUE(warnings_.empty());
  EXPECT_EQ(Metric("hourglass_memcached_evictions_total", small_), 0);
  EXPECT_EQ(Metric("hourglass_memcached_limit_bytes", small_), 8 * 1048576);
  EXPECT_EQ(Metric("hourglass_memcached_limit_bytes", large_), 256 * 1048576);
  // What an alert on a rise needs is there at 0 from the first look.
  EXPECT_EQ(Metric("hourglass_store_errors_total", large_), 0);
  EXPECT_EQ(Sample(metrics_.Render(), "hourglass_store_losses_total{cause=\"evicted\",server=\"" +
                                          large_.address() + "\",store=\"memcached\"}"),
            0);

  Overflow(small_);
  const long long evicted = small_.Stat("evictions");
  ASSERT_GT(evicted, 0) << "8 MB should not hold 200,000 items";
  watch_->Poll();
  ASSERT_EQ(warnings_.size(), 1u) << "only the small server evicted";
  EXPECT_NE(warnings_[0].find("memcached " + small_.address() + " evicted " +
                              std::to_string(evicted) + " items"),
            std::string::npos)
      << warnings_[0];
  EXPECT_NE(warnings_[0].find("give it more memory"), std::string::npos);
  EXPECT_EQ(Metric("hourglass_memcached_evictions_total", small_), static_cast<double>(evicted));
  EXPECT_EQ(Metric("hourglass_memcached_evictions_total", large_), 0);
  EXPECT_EQ(Metric("hourglass_memcached_items", small_),
            static_cast<double>(small_.Stat("curr_items")));
  EXPECT_EQ(Metric("hourglass_memcached_bytes", small_), static_cast<double>(small_.Stat("bytes")));

  watch_->Poll();  // nothing new
  EXPECT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(Metric("hourglass_memcached_evictions_total", small_), static_cast<double>(evicted));
}

TEST_F(StoreWatchTest, AServerThatEvictedBeforeTheFirstLookIsReported) {
  Overflow(small_);
  watch_->Poll();
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("before this process watched it"), std::string::npos);
}

TEST_F(StoreWatchTest, AStoppedServerIsAStoreErrorAndARestartedOneCountsFromZero) {
  Overflow(small_);
  watch_->Poll();
  const double before = Metric("hourglass_memcached_evictions_total", small_);
  small_.Kill();
  watch_->Poll();
  EXPECT_EQ(Sample(metrics_.Render(),
                   "hourglass_store_errors_total{server=\"" + small_.address() + "\"}"),
            1);
  EXPECT_EQ(Metric("hourglass_memcached_limit_bytes", large_), 256 * 1048576) << "still read";
  ASSERT_TRUE(small_.Start());
  Overflow(small_);
  warnings_.clear();
  watch_->Poll();
  ASSERT_EQ(warnings_.size(), 2u) << "the restart, and the evictions";
  EXPECT_NE(warnings_[0].find("restarted"), std::string::npos) << warnings_[0];
  EXPECT_EQ(Metric("hourglass_memcached_evictions_total", small_),
            before + static_cast<double>(small_.Stat("evictions")));
}

// A restart (another process) loses every count the server held before it started; the loss is
// dated at the poll that saw it (never too early), counted and told once.
TEST_F(StoreWatchTest, ARestartIsALossAtThePollThatSawIt) {
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  watch_->RecordLosses(losses, clock);
  watch_->Poll();
  EXPECT_FALSE(losses.any()) << "the first look tells nothing of the past";
  small_.Stop();
  ASSERT_TRUE(small_.Start());
  clock.Set(FromUnix(2'000'000'005));
  watch_->Poll();
  const std::vector<std::string> small = {small_.address()}, large = {large_.address()};
  const std::optional<StoreLoss> loss = losses.Since(small, 0);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kRestart);
  EXPECT_EQ(loss->kind, "memcached");
  EXPECT_EQ(loss->at, FromUnix(2'000'000'005));
  EXPECT_FALSE(losses.Since(small, 2'000'000'005).has_value()) << "a window from then is whole";
  EXPECT_FALSE(losses.Since(large, 0).has_value()) << "the other server lost nothing";
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find(small_.address() + " restarted at "), std::string::npos)
      << warnings_[0];
  watch_->Poll();
  EXPECT_EQ(warnings_.size(), 1u) << "told once";
  EXPECT_EQ(Sample(metrics_.Render(), "hourglass_store_losses_total{cause=\"restarted\",server=\"" +
                                          small_.address() + "\",store=\"memcached\"}"),
            1);
}

// A store whose new connections check the server's process finds a restart first (LossLog's
// path): the watch's next look counts it but does not tell it again.
TEST_F(StoreWatchTest, ARestartAConnectionFoundFirstIsToldOnce) {
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  std::vector<StoreLoss> found;
  MemcachedOptions options;
  options.servers = {small_.address()};
  options.on_loss = [&](const StoreLoss& loss) {
    found.push_back(loss);
    losses.Record(loss);
  };
  std::unique_ptr<MemcachedStore> store = std::move(*MemcachedStore::Create(options, clock));
  StoreWatch watch(*store, metrics_, [this](const std::string& w) { warnings_.push_back(w); });
  watch.RecordLosses(losses, clock);
  watch.Poll();  // the first connection: the process is learnt, nothing told
  EXPECT_TRUE(found.empty());
  small_.Stop();
  ASSERT_TRUE(small_.Start());
  clock.Set(FromUnix(2'000'000'003));
  const Batch hit{"g", {{"g:1:1", 1, Seconds{60}}}, {}};
  ASSERT_TRUE(store->Apply(hit).ok()) << "the new connection checks the process first";
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].at, FromUnix(2'000'000'003));
  EXPECT_EQ(found[0].cause, LossCause::kRestart);
  clock.Set(FromUnix(2'000'000'010));
  watch.Poll();
  EXPECT_TRUE(warnings_.empty()) << warnings_.front();
  EXPECT_EQ(Sample(metrics_.Render(), "hourglass_store_losses_total{cause=\"restarted\",server=\"" +
                                          small_.address() + "\",store=\"memcached\"}"),
            1);
  const std::vector<std::string> small = {small_.address()};
  EXPECT_EQ(losses.Since(small, 0)->at, FromUnix(2'000'000'003)) << "the earlier date stays";
}

// An LMDB directory deleted under the process: the store refuses to count (kDataLoss), and the
// watch tells it once, however many polls see it.
TEST(StoreWatchLmdb, ADeletedDirectoryIsToldOnce) {
  char dir[] = "/tmp/hourglass-watch-lmdb-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ManualClock clock(FromUnix(2'000'000'000));
  std::unique_ptr<LmdbStore> store = std::move(*LmdbStore::Create(LmdbOptions{.path = dir}, clock));
  ServiceMetrics metrics;
  std::vector<std::string> warnings;
  StoreWatch watch(*store, metrics, [&](const std::string& w) { warnings.push_back(w); });
  watch.Poll();
  EXPECT_TRUE(warnings.empty());
  std::filesystem::remove_all(dir);
  clock.Advance(Seconds{1});
  watch.Poll();
  watch.Poll();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("deleted, moved or replaced"), std::string::npos) << warnings[0];
}

// A flush (flush_all) loses every count too; memcached does not say when, so the loss is dated
// at the poll that saw it: never too early.
TEST_F(StoreWatchTest, AFlushIsALossAtThePollThatSawIt) {
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  watch_->RecordLosses(losses, clock);
  watch_->Poll();
  ASSERT_EQ(large_.Raw("flush_all\r\n"), "OK\r\n");
  clock.Set(FromUnix(2'000'000'007));
  watch_->Poll();
  const std::vector<std::string> large = {large_.address()};
  const std::optional<StoreLoss> loss = losses.Since(large, 0);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kFlush);
  EXPECT_EQ(loss->at, FromUnix(2'000'000'007));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("flushed"), std::string::npos) << warnings_[0];
}

// The watch keeps each server's latest loss in a note on the server: a watch started after the
// restart (another service, this one restarted) learns of it from there, and tells it once.
TEST_F(StoreWatchTest, ALossIsNotedOnItsServerForAWatchStartedAfterIt) {
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  watch_->RecordLosses(losses, clock);
  watch_->Poll();
  EXPECT_EQ(large_.Raw("get hourglass::note\r\n"),
            "VALUE hourglass::note 0 9\r\nloss none\r\nEND\r\n");
  small_.Stop();
  ASSERT_TRUE(small_.Start());
  clock.Set(FromUnix(2'000'000'005));
  watch_->Poll();
  EXPECT_EQ(small_.Raw("get hourglass::note\r\n"),
            "VALUE hourglass::note 0 25\r\nloss 2000000005 restarted\r\nEND\r\n");

  StoreLosses later_losses;
  ServiceMetrics later_metrics;
  std::vector<std::string> later_warnings;
  StoreWatch later(*store_, later_metrics,
                   [&](const std::string& w) { later_warnings.push_back(w); });
  later.RecordLosses(later_losses, clock);
  later.Poll();
  const std::vector<std::string> small = {small_.address()}, large = {large_.address()};
  const std::optional<StoreLoss> loss = later_losses.Since(small, 0);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kRestart);
  EXPECT_EQ(loss->at, FromUnix(2'000'000'005));
  EXPECT_FALSE(later_losses.Since(large, 0).has_value());
  ASSERT_EQ(later_warnings.size(), 1u);
  EXPECT_NE(later_warnings[0].find(small_.address() + " restarted at "), std::string::npos)
      << later_warnings[0];
  EXPECT_NE(later_warnings[0].find("told by the note"), std::string::npos) << later_warnings[0];
  later.Poll();
  EXPECT_EQ(later_warnings.size(), 1u) << "told once";
}

// A note that vanishes while its server kept its process and evicted nothing went with a flush
// the server's figures need not show (Redis FLUSHALL shows none): a loss at the poll that saw it.
TEST_F(StoreWatchTest, ANoteGoneFromTheSameProcessIsAFlush) {
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  watch_->RecordLosses(losses, clock);
  watch_->Poll();
  clock.Set(FromUnix(2'000'000'003));
  watch_->Poll();
  EXPECT_FALSE(losses.any()) << "a note kept is no loss";
  ASSERT_EQ(large_.Raw("delete hourglass::note\r\n"), "DELETED\r\n");
  clock.Set(FromUnix(2'000'000'006));
  watch_->Poll();
  const std::vector<std::string> large = {large_.address()}, small = {small_.address()};
  const std::optional<StoreLoss> loss = losses.Since(large, 0);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kFlush);
  EXPECT_EQ(loss->at, FromUnix(2'000'000'006));
  EXPECT_FALSE(losses.Since(small, 0).has_value());
  EXPECT_EQ(large_.Raw("get hourglass::note\r\n"),
            "VALUE hourglass::note 0 23\r\nloss 2000000006 flushed\r\nEND\r\n");
}

TEST(StoreWatchRedis, AFlushAllIsALossThoughNoFigureTellsIt) {
  testing::RedisServer server;
  ASSERT_TRUE(server.running()) << server.error();
  RedisOptions options;
  options.servers = {server.address()};
  Result<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  ServiceMetrics metrics;
  std::vector<std::string> warnings;
  StoreWatch watch(**store, metrics, [&](const std::string& w) { warnings.push_back(w); });
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  watch.RecordLosses(losses, clock);
  watch.Poll();
  ASSERT_TRUE((*store)->Apply(Batch{"g", {{"g:k", 1, Seconds{600}}}, {}}).ok());
  clock.Set(FromUnix(2'000'000'002));
  watch.Poll();
  EXPECT_FALSE(losses.any());
  (void)server.Command({"FLUSHALL"});
  clock.Set(FromUnix(2'000'000'004));
  watch.Poll();
  const std::vector<std::string> servers = {server.address()};
  const std::optional<StoreLoss> loss = losses.Since(servers, 0);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kFlush);
  EXPECT_EQ(loss->at, FromUnix(2'000'000'004));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("redis " + server.address() + " flushed at"), std::string::npos)
      << warnings[0];
}

// Evictions are a loss of counts last used before an instant: on a real server filled until it
// evicts, the items just written went unused for under a minute, so the loss is dated at the
// poll; the warning says which windows it makes inexact.
TEST_F(StoreWatchTest, AnEvictionIsALossOfWhatWasUsedBeforeIt) {
  StoreLosses losses;
  ManualClock clock{FromUnix(2'000'000'000)};
  watch_->RecordLosses(losses, clock);
  watch_->Poll();
  Overflow(small_);
  clock.Set(FromUnix(2'000'000'009));
  watch_->Poll();
  const std::vector<std::string> small = {small_.address()}, large = {large_.address()};
  const std::optional<StoreLoss> loss = losses.Since(small, 0);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kEviction);
  EXPECT_EQ(loss->at, FromUnix(2'000'000'009));
  EXPECT_EQ(loss->Describe(), "memcached " + small_.address() +
                                  " evicted counts last used at 2033-05-18T03:33:29Z or before");
  EXPECT_FALSE(losses.Since(large, 0).has_value());
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("windows reach back before 2033-05-18T03:33:29Z are degraded"),
            std::string::npos)
      << warnings_[0];
  EXPECT_EQ(Sample(metrics_.Render(), "hourglass_store_losses_total{cause=\"evicted\",server=\"" +
                                          small_.address() + "\",store=\"memcached\"}"),
            1);

  // The server's figures per slab class add up to its evictions.
  uint64_t per_class = 0;
  for (const Result<ServerStats>& stats : store_->Stats()) {
    ASSERT_TRUE(stats.ok());
    if (stats->server != small_.address()) continue;
    for (const ServerStats::ClassEvictions& c : stats->classes) per_class += c.evicted;
    EXPECT_EQ(per_class, stats->evictions);
  }
  EXPECT_GT(per_class, 0u);
}

// The date of an eviction: the youngest data a class that evicted since the last look lost
// (its evicted_time), less the minute memcached may lag in noting a use; never later than now.
TEST(EvictionLoss, IsDatedByTheYoungestDataEvictedSinceTheLastLook) {
  const Instant now = FromUnix(2'000'000'000);
  using Class = ServerStats::ClassEvictions;
  const std::vector<Class> before = {{.id = 1, .evicted = 10, .evicted_time = 30},
                                     {.id = 2, .evicted = 5, .evicted_time = 0}};
  ServerStats stats{.kind = "memcached", .server = "a:1", .evictions = 15};
  EXPECT_FALSE(EvictionLoss(15, before, stats, now).has_value()) << "none since";

  stats.evictions = 19;
  stats.classes = {{.id = 1, .evicted = 12, .evicted_time = 7200},
                   {.id = 2, .evicted = 5, .evicted_time = 0},  // unchanged: its age is old news
                   {.id = 3, .evicted = 2, .evicted_time = 3600}};
  std::optional<StoreLoss> loss = EvictionLoss(15, before, stats, now);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->cause, LossCause::kEviction);
  EXPECT_EQ(loss->at, now - Seconds{3600} + StoreWatch::kUseLag) << "class 3's, the youngest";

  stats.classes[0].evicted_time = 20;  // data used 20 s ago: the lag puts it at now
  EXPECT_EQ(EvictionLoss(15, before, stats, now)->at, now);

  stats.kind = "redis";  // tells no age
  stats.classes.clear();
  EXPECT_EQ(EvictionLoss(15, {}, stats, now)->at, now);
}

// A Redis that evicted and then had its maxmemory set to 0 (no limit) is not said to hold its
// bytes "of 0.0 MiB".
TEST(EvictionWarning, NamesNoLimitWhenTheServerHasNone) {
  ServerStats stats{.kind = "redis",
                    .server = "127.0.0.1:6379",
                    .evictions = 7,
                    .bytes = 3 * 1048576,
                    .limit_maxbytes = 0};
  const std::string unlimited = EvictionWarning(stats, 7, false);
  EXPECT_NE(unlimited.find("it holds 3.0 MiB, with no memory limit set now)"), std::string::npos)
      << unlimited;
  EXPECT_EQ(unlimited.find("of 0.0 MiB"), std::string::npos) << unlimited;
  stats.limit_maxbytes = 8 * 1048576;
  EXPECT_NE(EvictionWarning(stats, 7, false).find("it holds 3.0 MiB of 8.0 MiB)"),
            std::string::npos);
}

TEST_F(StoreWatchTest, StartPollsOnItsOwnThreadUntilDestroyed) {
  Overflow(small_);
  {
    StoreWatch watch(*store_, metrics_, [this](const std::string& w) { warnings_.push_back(w); });
    watch.Start(std::chrono::milliseconds{10});
    for (int i = 0; i < 500 && Metric("hourglass_memcached_evictions_total", small_) <= 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
  }
  EXPECT_GT(Metric("hourglass_memcached_evictions_total", small_), 0);
}

}  // namespace
}  // namespace hourglass
