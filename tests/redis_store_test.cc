// RedisStore's own behaviour with a real Redis, beyond the Store contract: URLs, passwords and
// databases; the packed layout as Redis keeps it (one hash per feature and hour, a field per
// minute with its seconds, so a busy hour costs a read no more than a quiet one, and racing
// hits and take-backs lose nothing); values another client wrote; a server killed,
// frozen, restarted or flushed of its scripts; evictions and memory in its stats; several
// standalone servers sharing the groups.
#include "hourglass/redis_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <thread>

#include "hourglass/engine.h"
#include "redis_server.h"
#include "store_harness.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kHourStart = 1'431'856'800;  // an hour's first second

TEST(RedisUrl, ServersPasswordsAndDatabases) {
  Result<RedisOptions> o = ParseRedisUrl("redis://10.0.0.1:6379,[::1]:6380/3");
  ASSERT_TRUE(o.ok()) << o.error().ToString();
  EXPECT_EQ(o->servers, (std::vector<std::string>{"10.0.0.1:6379", "[::1]:6380"}));
  EXPECT_FALSE(o->cluster);
  EXPECT_EQ(o->database, 3u);
  EXPECT_TRUE(o->password.empty());
  o = ParseRedisUrl("redis+cluster://app:p%40ss%3Aword@h1:7000,h2:7001");
  ASSERT_TRUE(o.ok()) << o.error().ToString();
  EXPECT_TRUE(o->cluster);
  EXPECT_EQ(o->username, "app");
  EXPECT_EQ(o->password, "p@ss:word");
  EXPECT_EQ(o->servers.size(), 2u);
  o = ParseRedisUrl("redis://:only-a-password@h:1");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->username, "");
  EXPECT_EQ(o->password, "only-a-password");
  for (const char* bad :
       {"redis://", "redis://h", "redis://h:0", "redis://h:1/db", "redis+cluster://h:1/1",
        "redis://user@h:1", "redis://:%4@h:1", "redis://:%zz@h:1", "memcached://h:1"}) {
    Result<RedisOptions> r = ParseRedisUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("redis://"), std::string::npos) << r.error().message();
  }
}

class RedisStoreTest : public ::testing::Test {
 protected:
  void Open(RedisOptions options = {}, testing::RedisServerOptions server = {}) {
    server_ = std::make_unique<testing::RedisServer>(server);
    ASSERT_TRUE(server_->running()) << server_->error();
    options.servers = {server_->address()};
    Result<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(*store);
  }
  testing::RedisServer& server() { return *server_; }
  RedisStore& store() { return *store_; }
  std::string name() { return "redis " + server().address(); }

  static std::string Second(int64_t t) { return "g:1:" + std::to_string(t); }
  static std::string Minute(int64_t t) { return "g:60:" + std::to_string(t / 60); }
  static std::string Hour(int64_t t) { return "g:3600:" + std::to_string(t / 3600); }
  static std::string Pack() { return "{g}:p:" + std::to_string(kHourStart / 3600); }
  static Batch Hit(int64_t t, int64_t delta = 1) {
    return Batch{"g",
                 {{Second(t), delta, Seconds{86460}},
                  {Minute(t), delta, Seconds{90000}},
                  {Hour(t), delta, Seconds{176400}}},
                 {}};
  }
  long long Fields() { return std::atoll(server().Command({"HLEN", Pack()}).c_str()); }
  long long PackMemory() {
    return std::atoll(server().Command({"MEMORY", "USAGE", Pack()}).c_str());
  }
  long long Keys() { return std::atoll(server().Command({"DBSIZE"}).c_str()); }

  std::unique_ptr<testing::RedisServer> server_;
  std::unique_ptr<RedisStore> store_;
};

TEST_F(RedisStoreTest, AnHourIsOneHashOfAFieldPerMinuteThatLivesItsTtl) {
  Open();
  for (int64_t i = 0; i < 300; ++i) ASSERT_TRUE(store().Apply(Hit(kHourStart + i * 12)).ok());
  EXPECT_EQ(Keys(), 1) << "the pack, the hour's count included";
  EXPECT_EQ(server().Command({"TYPE", Pack()}), "hash");
  EXPECT_EQ(Fields(), 1 + 60) << "the hour and each minute, its seconds within it";
  const long long ttl = std::atoll(server().Command({"TTL", Pack()}).c_str());
  EXPECT_GT(ttl, 176400 - 60);
  EXPECT_LE(ttl, 176400 + 3600);
  Result<std::vector<uint64_t>> values =
      store().Apply(Batch{"g",
                          {},
                          {Second(kHourStart + 12), Second(kHourStart + 13),
                           Minute(kHourStart + 60), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{1, 0, 5, 300}));
  // Counters (a generation, a ledger) are plain integers with their TTL.
  ASSERT_TRUE(store().Apply(Batch{"g", {{"g:g", 3, Seconds{600}}}, {}}).ok());
  EXPECT_EQ(server().Command({"GET", "{g}:g"}), "3");
  EXPECT_GT(std::atoll(server().Command({"TTL", "{g}:g"}).c_str()), 590);
}

// A hit every second of the hour, and a second hit 70,000 times over: the hash holds one entry
// per busy second (a few bytes each, as the packed layout's records did), and a value that needs
// more than a byte reads back whole.
TEST_F(RedisStoreTest, ABusyHourIsAFewBytesASecondAndLargeValuesReadBack) {
  RedisOptions options;
  options.io_timeout = std::chrono::seconds(30);  // an hour of hits in one pipeline: no deadline
  Open(options);
  std::vector<Batch> hits;
  for (int64_t i = 0; i < 3600; ++i) hits.push_back(Hit(kHourStart + i));
  hits.push_back(Hit(kHourStart + 61, 70000));
  for (const Status& s : store().Send(hits)) ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_EQ(Fields(), 61);
  EXPECT_LT(PackMemory(), 3600 * 4) << "at most 4 bytes a busy second, overheads included";
  Result<std::vector<uint64_t>> values =
      store().Apply(Batch{"g",
                          {},
                          {Second(kHourStart + 61), Second(kHourStart + 62),
                           Minute(kHourStart + 61), Minute(kHourStart + 3599), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{70001, 1, 70060, 60, 73600}));
  // Taking back more than is there floors each level at 0; taking back the rest of the hour
  // empties every field, and an empty hash is no key.
  ASSERT_TRUE(store().Apply(Hit(kHourStart + 61, -80000)).ok());
  values = store().Apply(Batch{"g", {}, {Second(kHourStart + 61), Minute(kHourStart + 61)}});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<uint64_t>{0, 0}));
  std::vector<Batch> back;
  for (int64_t i = 0; i < 3600; ++i) {
    if (i != 61) back.push_back(Hit(kHourStart + i, -1));
  }
  for (const Status& s : store().Send(back)) ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_EQ(Keys(), 0) << server().Command({"KEYS", "*"});
}

// Hits and take-backs racing from several threads on one second, read as they go: the script
// applies each atomically, so nothing is lost or counted twice.
TEST_F(RedisStoreTest, RacingHitsAndTakeBacksLoseNothing) {
  Open();
  constexpr int kThreads = 4, kRounds = 400;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Batch batch = Hit(kHourStart + 30);
        batch.reads = {Second(kHourStart + 30)};
        if (!store().Apply(batch).ok()) ++errors;
        if (t % 2 == 1 && r % 4 == 0 && !store().Apply(Hit(kHourStart + 30, -1)).ok()) ++errors;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(store().Flush(), 0u);
  const uint64_t expected = kThreads * kRounds - 2 * (kRounds / 4);
  Result<std::vector<uint64_t>> values = store().Apply(
      Batch{"g", {}, {Second(kHourStart + 30), Minute(kHourStart + 30), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{expected, expected, expected}));
  EXPECT_EQ(Fields(), 2) << "the hour and the one minute";
}

TEST_F(RedisStoreTest, AValueAnotherClientWroteIsNamedAndAResetDeletesIt) {
  Open();
  ASSERT_EQ(server().Command({"SET", "{g}:bad", "abc"}), "OK");
  ASSERT_EQ(server().Command({"HSET", "{g}:hash", "f", "1"}), "1");
  ASSERT_EQ(server().Command({"SET", Pack(), "xy"}), "OK");  // a string, not a pack's hash
  // A string that is not a counter is named when read; a key of another type reads as absent
  // (Redis's MGET), and both are named when written.
  Result<std::vector<uint64_t>> read = store().Apply(Batch{"g", {}, {"g:ok", "g:bad"}});
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message().find("{g}:bad"), std::string::npos) << read.error().message();
  for (const std::string& key : {std::string("g:bad"), std::string("g:hash")}) {
    Result<std::vector<uint64_t>> incremented =
        store().Apply(Batch{"g", {{key, 1, Seconds{60}}}, {}});
    ASSERT_FALSE(incremented.ok()) << key;
    EXPECT_NE(incremented.error().message().find("reset"), std::string::npos)
        << incremented.error().message();
  }
  Result<std::vector<uint64_t>> pack = store().Apply(Batch{"g", {}, {Second(kHourStart)}});
  ASSERT_FALSE(pack.ok());
  EXPECT_NE(pack.error().message().find("the value under \"" + Pack() + "\" is not a pack"),
            std::string::npos)
      << "named as Redis holds it, with its {} tag: " << pack.error().message();
  Batch lenient{"g", {}, {"g:ok", "g:bad", Second(kHourStart)}};
  lenient.non_counters_read_as_max = true;
  Result<std::vector<uint64_t>> seen = store().Apply(lenient);
  ASSERT_TRUE(seen.ok()) << seen.error().ToString();
  EXPECT_EQ((*seen)[1], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ((*seen)[2], std::numeric_limits<uint64_t>::max());
  const std::vector<std::string> doomed = {"g:bad", "g:hash", Second(kHourStart),
                                           Minute(kHourStart), Hour(kHourStart)};
  // A whole pack's slots: the reset deletes the key itself.
  std::vector<std::string> every = doomed;
  for (int64_t s = 1; s < 3600; ++s) every.push_back(Second(kHourStart + s));
  for (int64_t m = 1; m < 60; ++m) every.push_back(Minute(kHourStart + 60 * m));
  ASSERT_TRUE(store().Delete("g", every).ok());
  EXPECT_EQ(Keys(), 0) << server().Command({"KEYS", "*"});
  EXPECT_TRUE(store().Apply(Batch{"g", {{"g:ok", 1, Seconds{60}}}, {"g:ok"}}).ok());
}

TEST_F(RedisStoreTest, DatabasesKeepClientsApart) {
  Open();
  RedisOptions one, two;
  one.servers = two.servers = {server().address()};
  one.database = 1;
  two.database = 2;
  std::unique_ptr<RedisStore> a = std::move(*RedisStore::Create(one));
  std::unique_ptr<RedisStore> b = std::move(*RedisStore::Create(two));
  ASSERT_TRUE(a->Apply(Batch{"g", {{"g:k", 5, Seconds{60}}}, {}}).ok());
  EXPECT_EQ(*b->Apply(Batch{"g", {}, {"g:k"}}), (std::vector<uint64_t>{0}));
  EXPECT_EQ(*a->Apply(Batch{"g", {}, {"g:k"}}), (std::vector<uint64_t>{5}));
  EXPECT_EQ(Keys(), 0) << "database 0 holds nothing";
}

TEST_F(RedisStoreTest, AKilledServerFailsFastThenIsUsedAgainAndTransitionsAreToldOnce) {
  std::vector<ServerTransition> told;
  std::mutex mu;
  RedisOptions options;
  options.retry_timeout = std::chrono::seconds{1};
  options.on_transition = [&](const ServerTransition& t) {
    std::lock_guard lock(mu);
    told.push_back(t);
  };
  Open(options);
  const Batch hit{"g", {{"g:k", 1, Seconds{60}}}, {"g:k"}};
  ASSERT_TRUE(store().Apply(hit).ok());
  server().Kill();
  // The pooled connection's exchange fails; then connecting is refused: the server fails fast.
  Result<std::vector<uint64_t>> first = store().Apply(hit);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code(), ErrorCode::kUnavailable) << first.error().ToString();
  EXPECT_NE(first.error().message().find(name()), std::string::npos) << first.error().message();
  Result<std::vector<uint64_t>> refused = store().Apply(hit);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("connect"), std::string::npos)
      << refused.error().message();
  ASSERT_TRUE(server().Start()) << server().error();
  Result<std::vector<uint64_t>> fast = store().Apply(hit);
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.error().message().find("not retried yet"), std::string::npos)
      << fast.error().message();
  std::this_thread::sleep_for(milliseconds{1100});
  Result<std::vector<uint64_t>> back = store().Apply(hit);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, (std::vector<uint64_t>{1})) << "a restarted Redis without persistence is empty";
  std::lock_guard lock(mu);
  ASSERT_EQ(told.size(), 2u);
  EXPECT_FALSE(told[0].reachable);
  EXPECT_EQ(told[0].server, server().address());
  EXPECT_TRUE(told[1].reachable);
}

TEST_F(RedisStoreTest, AFrozenServerIsADeadlineErrorWithinTheTimeout) {
  RedisOptions options;
  options.io_timeout = milliseconds{300};
  Open(options);
  const Batch hit{"g", {{"g:k", 1, Seconds{60}}}, {"g:k"}};
  ASSERT_TRUE(store().Apply(hit).ok());
  ASSERT_TRUE(server().Freeze());
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<uint64_t>> frozen = store().Apply(hit);
  const auto took = std::chrono::steady_clock::now() - start;
  server().Thaw();
  ASSERT_FALSE(frozen.ok());
  EXPECT_EQ(frozen.error().code(), ErrorCode::kDeadlineExceeded) << frozen.error().ToString();
  EXPECT_NE(frozen.error().message().find("may have been applied"), std::string::npos)
      << frozen.error().message();
  EXPECT_LT(took, std::chrono::seconds{2}) << "bounded by io_timeout, not by the server";
}

TEST_F(RedisStoreTest, ARestartWhileIdleAndFlushedScriptsFailNoRequest) {
  Open();
  const Batch hit{"g", {{"g:k", 1, Seconds{60}}}, {"g:k"}};
  ASSERT_TRUE(store().Apply(hit).ok());  // leaves a connection in the pool
  server().Kill();
  ASSERT_TRUE(server().Start()) << server().error();
  std::this_thread::sleep_for(milliseconds{600});  // the pooled connection sat idle meanwhile
  Result<std::vector<uint64_t>> after = store().Apply(hit);
  ASSERT_TRUE(after.ok()) << "the closed pooled connection was used: " << after.error().ToString();
  EXPECT_EQ(*after, (std::vector<uint64_t>{1}));
  // An operator flushes the script cache: the batch is sent again on a connection that loads them.
  ASSERT_EQ(server().Command({"SCRIPT", "FLUSH"}), "OK");
  after = store().Apply(hit);
  ASSERT_TRUE(after.ok()) << after.error().ToString();
  EXPECT_EQ(*after, (std::vector<uint64_t>{2}));
}

// A Redis out of memory without eviction refuses writes: the batch's error says so and is
// transient (the policy's failure mode answers), and refused fire-and-forget writes are counted.
TEST_F(RedisStoreTest, AFullRedisThatDoesNotEvictRefusesWritesVisibly) {
  Open({}, {.maxmemory_mb = 2, .policy = "noeviction"});
  // Another tenant fills it (a script stops at the first refusal: the server is full).
  (void)server().Command({"EVAL",
                          "for i = 1, 4000 do redis.call('SET', 'filler:' .. i, "
                          "string.rep('x', 1000)) end",
                          "0"});
  Result<std::vector<uint64_t>> refused =
      store().Apply(Batch{"g", {{"g:k", 1, Seconds{60}}}, {"g:k"}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kStoreFull) << refused.error().ToString();
  EXPECT_NE(refused.error().message().find("OOM"), std::string::npos) << refused.error().message();
  refused = store().Apply(Hit(kHourStart));  // a pack's first write
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kStoreFull) << refused.error().ToString();
  EXPECT_NE(refused.error().message().find("OOM"), std::string::npos) << refused.error().message();
  ASSERT_TRUE(
      store().Send(std::vector<Batch>{Batch{"g", {{"g:k", 1, Seconds{60}}}, {}}}).front().ok());
  EXPECT_EQ(store().Flush(), 1u);
}

// With an evicting policy Redis drops keys silently; the store's stats tell it, with the memory
// used and the keys held, as memcached's do.
TEST_F(RedisStoreTest, StatsTellEvictionsMemoryKeysAndTheServersClock) {
  Open({}, {.maxmemory_mb = 2, .policy = "allkeys-lru"});
  std::vector<Result<ServerStats>> before = store().Stats();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_TRUE(before[0].ok()) << before[0].error().ToString();
  EXPECT_EQ(before[0]->evictions, 0u);
  EXPECT_EQ(before[0]->limit_maxbytes, 2u * 1024 * 1024);
  EXPECT_EQ(before[0]->server, server().address());
  EXPECT_NEAR(static_cast<double>(before[0]->time), static_cast<double>(std::time(nullptr)), 2.0);
  EXPECT_EQ(before[0]->pid, static_cast<uint64_t>(server().pid()));
  for (int i = 0; i < 200; ++i) {
    const std::string group = "g" + std::to_string(i);
    ASSERT_TRUE(store().Apply(Batch{group, {{group + ":k", 1, Seconds{600}}}, {}}).ok());
  }
  (void)server().Command({"EVAL",
                          "for i = 1, 4000 do redis.call('SET', 'other:' .. i, "
                          "string.rep('b', 2000)) end",
                          "0"});
  ASSERT_GT(server().Info("evicted_keys"), 0);
  std::vector<Result<ServerStats>> after = store().Stats();
  ASSERT_TRUE(after[0].ok()) << after[0].error().ToString();
  EXPECT_GT(after[0]->evictions, 0u);
  EXPECT_GT(after[0]->bytes, 0u);
  EXPECT_GT(after[0]->curr_items, 0u);
}

// The server keeps the note every client of it reads; FLUSHALL takes it with the counts.
TEST_F(RedisStoreTest, TheServersNoteIsReadByEveryClientUntilItsDataIsFlushed) {
  Open();
  std::vector<Result<ServerNote>> notes = store().Notes();
  ASSERT_EQ(notes.size(), 1u);
  ASSERT_TRUE(notes[0].ok()) << notes[0].error().ToString();
  EXPECT_EQ(notes[0]->kind, "redis");
  EXPECT_EQ(notes[0]->server, server().address());
  EXPECT_FALSE(notes[0]->text.has_value());
  ASSERT_TRUE(store().WriteNote(server().address(), "loss none").ok());
  EXPECT_EQ(server().Command({"GET", "hourglass::note"}), "loss none");
  RedisOptions options;
  options.servers = {server().address()};
  Result<std::unique_ptr<RedisStore>> other = RedisStore::Create(options);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->Notes()[0]->text, "loss none");
  Status bad = store().WriteNote(server().address(), "a\nb");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(store().WriteNote("127.0.0.1:1", "loss none").ok());
  (void)server().Command({"FLUSHALL"});
  EXPECT_FALSE((*other)->Notes()[0]->text.has_value());
}

// Standalone servers listed together share the groups: each group on one server, the same one for
// any order of the list, and a batch for each server answered by it.
TEST(RedisStoreShards, ServersListedTogetherShareTheGroupsTheSameWayInAnyOrder) {
  testing::RedisServer a, b;
  ASSERT_TRUE(a.running() && b.running()) << a.error() << b.error();
  RedisOptions ab, ba;
  ab.servers = {a.address(), b.address()};
  ba.servers = {b.address(), a.address()};
  std::unique_ptr<RedisStore> one = std::move(*RedisStore::Create(ab));
  std::unique_ptr<RedisStore> two = std::move(*RedisStore::Create(ba));
  std::vector<Batch> batches;
  std::set<std::string> used;
  for (int i = 0; i < 40; ++i) {
    const std::string group = "g" + std::to_string(i);
    batches.push_back(Batch{group, {{group + ":k", i + 1, Seconds{60}}}, {group + ":k"}});
    ASSERT_EQ(*one->ServerFor(group), *two->ServerFor(group)) << group;
    used.insert(*one->ServerFor(group));
  }
  EXPECT_EQ(used.size(), 2u) << "both servers hold groups";
  std::vector<Result<std::vector<uint64_t>>> results = one->ApplyMany(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().ToString();
    EXPECT_EQ(*results[i], (std::vector<uint64_t>{i + 1}));
  }
  results = two->ApplyMany(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().ToString();
    EXPECT_EQ(*results[i], (std::vector<uint64_t>{2 * (i + 1)}));
  }
  EXPECT_EQ(std::atoll(a.Command({"DBSIZE"}).c_str()) + std::atoll(b.Command({"DBSIZE"}).c_str()),
            40);
  b.Kill();
  results = one->ApplyMany(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(results[i].ok(), *one->ServerFor(batches[i].group) == a.address())
        << "a killed server fails only its own groups";
  }
}

}  // namespace
}  // namespace hourglass
